"""fabcheck pair with its default launcher, ssh, for real (issue #3: "ssh (default;
ssh -o BatchMode=yes HOST)"): a real sshd in each netns host, the real OpenSSH client, key
authentication. The only test scaffolding is an `ssh` wrapper first on PATH that adds `-F CONFIG`
(known hosts + identity in the test's temp dir, so root's ~/.ssh is never touched); the argv the
launcher builds reaches /usr/bin/ssh unchanged, and the session token travels on stdin.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
import machine  # noqa: E402
from netns import NetnsWorld, have_root_and_netns  # noqa: E402

FABCHECK = None


def sh(*argv):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class PairOverSsh(unittest.TestCase):
    def setUp(self):
        ok, why = have_root_and_netns()
        if not ok or not shutil.which("sshd", path="/usr/sbin:/usr/bin"):
            self.skipTest(why or "sshd not installed (openssh-server)")
        self.dir = tempfile.mkdtemp(prefix="fabkit-ssh-")
        self.sshd = []
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation directory
        d = self.dir
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d + "/host_key")
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d + "/id")
        shutil.copy(d + "/id.pub", d + "/authorized_keys")
        os.chmod(d, 0o700)
        with open(d + "/host_key.pub") as f:
            self.host_pub = f.read().split()[:2]

    def tearDown(self):
        for p in self.sshd:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start_sshd(self, world, i, extra_config=""):
        d, addr = self.dir, world.addr(i)
        cfg = os.path.join(d, "sshd_%d.conf" % i)
        with open(cfg, "w") as f:
            f.write("ListenAddress %s\nPort 22\nHostKey %s/host_key\nAuthorizedKeysFile %s/authorized_keys\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
                    "StrictModes no\nPidFile %s/sshd_%d.pid\n%s" % (addr, d, d, d, i, extra_config))
        with open(os.path.join(d, "sshd_%d.log" % i), "w") as log:
            p = subprocess.Popen(["ip", "netns", "exec", world.hosts[i], "/usr/sbin/sshd", "-D", "-e", "-f", cfg],
                                 stdout=subprocess.DEVNULL, stderr=log)
        self.sshd.append(p)
        return addr

    def ssh_world(self, w, n, extra_config=""):
        """sshd in each of n hosts, and the client's environment: (addresses, env)."""
        addrs = [self.start_sshd(w, i, extra_config) for i in range(n)]
        d = self.dir
        with open(d + "/known_hosts", "w") as f:
            for a in addrs:
                f.write("%s %s %s\n" % (a, self.host_pub[0], self.host_pub[1]))
        with open(d + "/ssh_config", "w") as f:
            f.write("Host *\n  IdentityFile %s/id\n  UserKnownHostsFile %s/known_hosts\n"
                    "  StrictHostKeyChecking yes\n  User root\n" % (d, d))
        bindir = os.path.join(d, "bin")
        os.makedirs(bindir)
        with open(bindir + "/ssh", "w") as f:
            f.write('#!/bin/sh\nexec /usr/bin/ssh -F %s/ssh_config "$@"\n' % d)
        os.chmod(bindir + "/ssh", 0o755)
        env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        for a in addrs:
            deadline = time.time() + 10  # sshd binds within a moment of starting
            while time.time() < deadline:
                r = subprocess.run(["ip", "netns", "exec", w.ctl, "ssh", "-o", "BatchMode=yes", a, "true"],
                                   env=env, capture_output=True, text=True)
                if r.returncode == 0:
                    break
                time.sleep(0.3)
        return addrs, env

    def test_default_ssh_launcher_runs_the_pair(self):
        with NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            addrs, env = self.ssh_world(w, 2)
            t0 = time.time()
            r = subprocess.run(["ip", "netns", "exec", w.ctl, FABCHECK, "pair", addrs[0], addrs[1],
                                "--sizes", "4K,1M", "--json", "--timeout-ms", "20000"],
                               env=env, capture_output=True, text=True, timeout=120)
            self.assertIn(r.returncode, (0, 1), r.stdout[-2000:] + r.stderr[-2000:])
            doc = json.loads(r.stdout)
            pair = doc["pair"]
            self.assertEqual(pair["launcher"], "ssh")
            launches = [s for s in pair["steps"] if s["step"] == "launch"]
            self.assertTrue(launches and all(s["status"] == "ok" for s in launches), pair["steps"])
            self.assertEqual(pair["recommended"]["addr_a"], addrs[0])
            by_name = {t["transport"]: t for t in pair["transports"]}
            self.assertTrue(by_name["fabkit-socket"]["all_correct"], by_name["fabkit-socket"])
            # NCCL / ibverbs: "unavailable" without the hardware; with it they run or say why.
            for name, t in by_name.items():
                allowed, why = machine.expected_statuses(name)
                self.assertIn(t["status"], allowed, "%s (%s): %s" % (name, why, t))
                if t["status"] != "ok":
                    self.assertTrue(t["reason"], t)
            self.assertLess(time.time() - t0, 100)

    def test_ship_sends_the_binary_through_ssh_stdin(self):
        # --ship over real ssh (issue #24): the receiving program crosses the remote login shell
        # quoted, the binary and then the token cross ssh's stdin; the copy is checked, run and
        # removed. The controller is a copy without debug sections in a directory of its own.
        controller = os.path.join(self.dir, "controller", "fabcheck")
        os.makedirs(os.path.dirname(controller))
        sh("objcopy", "--strip-debug", FABCHECK, controller)
        ship_dir = os.path.join(self.dir, "ship")
        os.makedirs(ship_dir)
        with NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            addrs, env = self.ssh_world(w, 2)
            r = subprocess.run(["ip", "netns", "exec", w.ctl, controller, "pair", addrs[0], addrs[1], "--ship",
                                "--ship-dir", ship_dir, "--transports", "none", "--pings", "50",
                                "--bandwidth-ms", "100", "--json", "--timeout-ms", "20000"],
                               env=env, capture_output=True, text=True, timeout=120)
            doc = json.loads(r.stdout)
            failed = [st for st in doc["pair"]["steps"] if st["status"] == "failed"]
            self.assertEqual([], failed, r.stderr[-2000:])
            for side in ("a", "b"):
                self.assertTrue(doc["pair"]["agents"][side]["agent_shipped"], doc["pair"]["agents"][side])
        self.assertEqual([], os.listdir(ship_dir))

    def test_ship_without_ship_dir_uses_the_hosts_temporary_directory(self):
        # Without --ship-dir the receiver's base directory is "the host's $TMPDIR or /tmp". ssh
        # joins its remote words into one command line, where an empty word vanishes: the receiver
        # then took fabcheck's first argument for its directory, mktemp failed and the launch
        # waited out its hello timeout. The logins' $TMPDIR (sshd's SetEnv) is a directory of this
        # test's: the copies go there and go away, and once others may write it (no sticky bit)
        # the hosts refuse it by name.
        controller = os.path.join(self.dir, "controller", "fabcheck")
        os.makedirs(os.path.dirname(controller))
        sh("objcopy", "--strip-debug", FABCHECK, controller)
        host_tmp = os.path.join(self.dir, "host-tmp")
        os.makedirs(host_tmp)
        with NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            addrs, env = self.ssh_world(w, 2, extra_config="SetEnv TMPDIR=%s\n" % host_tmp)

            def pair():
                r = subprocess.run(["ip", "netns", "exec", w.ctl, controller, "pair", addrs[0], addrs[1],
                                    "--ship", "--transports", "none", "--pings", "50", "--bandwidth-ms", "100",
                                    "--json", "--timeout-ms", "20000"],
                                   env=env, capture_output=True, text=True, timeout=120)
                doc = json.loads(r.stdout)
                return r, doc, [st for st in doc["pair"]["steps"] if st["status"] == "failed"]

            t0 = time.time()
            r, doc, failed = pair()
            self.assertEqual([], failed, r.stderr[-2000:])
            for side in ("a", "b"):
                self.assertTrue(doc["pair"]["agents"][side]["agent_shipped"], doc["pair"]["agents"][side])
            self.assertLess(time.time() - t0, 40)  # no launch waited out a timeout
            self.assertEqual([], os.listdir(host_tmp))

            os.chmod(host_tmp, 0o777)
            r, doc, failed = pair()
            self.assertEqual(1, len(failed), doc["pair"]["steps"])
            self.assertEqual("pair.ship_unsafe_dir", failed[0]["code"], failed[0])
            self.assertIn(host_tmp + " may be written by group or others", failed[0]["error"])
            self.assertEqual(1, r.returncode)
        self.assertEqual([], os.listdir(host_tmp))

    def test_cluster_with_hosts_defaults_to_ssh(self):
        # fabcheck cluster given hosts (no allocation): node checks and agents over real ssh.
        with NetnsWorld(hosts=3, decoys=False, controller=True) as w:
            addrs, env = self.ssh_world(w, 3)
            env = {k: v for k, v in env.items() if not k.startswith("SLURM_")}
            r = subprocess.run(["ip", "netns", "exec", w.ctl, FABCHECK, "cluster", *addrs, "--json",
                                "--timeout-ms", "20000", "--bandwidth-ms", "200", "--pings", "50",
                                "--slow-fraction", "0.2"],
                               env=env, capture_output=True, text=True, timeout=150)
            self.assertIn(r.returncode, (0, 1), r.stdout[-2000:] + r.stderr[-2000:])
            c = json.loads(r.stdout)["cluster"]
            self.assertEqual(c["launcher"], "ssh")
            self.assertEqual([n["check"] for n in c["nodes"]], ["ok"] * 3, c["nodes"])
            self.assertEqual(len(c["matrix"]["pairs"]), 3)
            for p in c["matrix"]["pairs"]:
                self.assertTrue(p["ok"], p)
                self.assertEqual(p["link"]["addr_a"], p["a"])  # each agent on its own host


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
