#!/bin/bash
# Slurm HealthCheckProgram / prolog wrapper for `fabcheck node --slurm-health` (docs/cluster.md):
# Slurm runs the program without arguments, so the options live here.
#
#   slurm.conf:  HealthCheckProgram=/usr/libexec/fabkit/fabcheck-health.sh   (the .deb's place)
#                HealthCheckInterval=300
#                HealthCheckNodeState=IDLE      # only between jobs: the check is quick, but the
#                                               # counter read watches the HCA for 50 ms
#   environment: FABCHECK (default: ../../bin/fabcheck from this script, else
#                /usr/local/bin/fabcheck), FABKIT_PROM (a node_exporter
#                textfile to write, e.g. /var/lib/prometheus/node-exporter/fabkit.prom),
#                FABKIT_HEALTH_DRY_RUN=1 (report only).
# Extra arguments are passed on (tests give --sysroot and --node-name).
# Exit 0: healthy (warnings included); 1: drained; 3: scontrol failed (named on stderr).
set -u
args=(node --slurm-health)
[ -n "${FABKIT_PROM:-}" ] && args+=(--prom "$FABKIT_PROM")
[ "${FABKIT_HEALTH_DRY_RUN:-0}" = 1 ] && args+=(--dry-run)
# Installed (libexec/fabkit/), the fabcheck of the same install is the default: bin/ two levels up.
if [ -z "${FABCHECK:-}" ]; then
  FABCHECK=/usr/local/bin/fabcheck
  here=$(dirname "$0")
  [ -x "$here/../../bin/fabcheck" ] && FABCHECK="$here/../../bin/fabcheck"
fi
exec "$FABCHECK" "${args[@]}" "$@"
