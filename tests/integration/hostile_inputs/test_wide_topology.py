"""A topology file with 60k <pci> elements (~11 MB, under the 16 MiB cap) is read in linear time
(issue #19: each element's line number was found by rescanning the file from the start, so 60k
elements ran for minutes and, through NCCL_TOPO_FILE, hung the Slurm health check). ctest's
TIMEOUT is the bound; the timings themselves are bench/topo/'s. Line numbers stay exact.

Run: test_wide_topology.py /path/to/fabcheck
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from wide_topology import bus_id, wide_topology  # noqa: E402

FABCHECK = None
N = 60000


class WideTopology(unittest.TestCase):
    def topo(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(text)
            f.flush()
            return subprocess.run([FABCHECK, "topo", f.name, "--json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=600), f.name

    def test_sixty_thousand_devices_are_read(self):
        r, _ = self.topo(wide_topology(N))
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        doc = json.loads(r.stdout)
        self.assertEqual(doc["topo"]["pci_devices"], N)

    def test_line_numbers_stay_exact(self):
        # The last element repeats the first bus id: the error names both lines (3 and N + 2).
        r, path = self.topo(wide_topology(N, duplicate_last=True))
        self.assertEqual(r.returncode, 2, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertIn("%s:%d: <pci>: busid %s already appears on line 3" % (path, N + 2, bus_id(0)),
                      r.stdout + r.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_wide_topology.py /path/to/fabcheck")
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
