"""A topology file with 60k <pci> elements (~11 MB, under the 16 MiB cap) is read in linear time
(issue #19: each element's line number was found by rescanning the file from the start, so 60k
elements ran for minutes and, through NCCL_TOPO_FILE, hung the Slurm health check). ctest's
TIMEOUT is the bound; the timings themselves are bench/topo/'s. Line numbers stay exact.

Issue #36: every GPU is paired with every NIC, so 4000 GPUs x 4000 NICs took 25 s, 4.5 GB and
printed 421 MB, and 8000 x 8000 through NCCL_TOPO_FILE killed the health check with bad_alloc; a
15 MB file of unknown elements took 5.9 GB. Files over the caps are refused (exit 2, or the
topo_file.malformed finding in `fabcheck node`) naming the cap; the widest legal one prints a
bounded document that counts the NIC ties it leaves out.

Run: test_wide_topology.py /path/to/fabcheck
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from json_schemas import validate_doc  # noqa: E402
from wide_topology import bus_id, gpus_and_nics, unknown_elements, wide_topology  # noqa: E402

MAX_GPUS, MAX_NICS, EQUALLY_NEAR_LISTED = 1024, 2048, 64  # topo/topology.h, topology_json.h
NOTES_LISTED = 64  # topo/nccl_topo_xml.h
MEMORY_LIMIT = 2 << 30  # address space for the runs below; the old code needed more than 4.5 GB

FABCHECK = None
N = 60000


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class WideTopology(unittest.TestCase):
    def topo(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(text)
            f.flush()
            return subprocess.run([FABCHECK, "topo", f.name, "--json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=600,
                                  preexec_fn=limit_memory), f.name

    def assert_refused(self, r, *needles):
        self.assertEqual(r.returncode, 2, r.stdout[-2000:] + r.stderr[-2000:])
        self.assertNotIn("bad_alloc", r.stdout + r.stderr)
        message = json.loads(r.stdout)["error"]["message"]
        for n in needles:
            self.assertIn(n, message)

    def test_four_thousand_gpus_by_four_thousand_nics_are_refused(self):
        r, path = self.topo(gpus_and_nics(4000, 4000))
        self.assert_refused(r, "%s:%d: <pci>: more than %d GPUs" % (path, MAX_GPUS + 3, MAX_GPUS))

    def test_widest_legal_topology_prints_a_bounded_document(self):
        r, _ = self.topo(gpus_and_nics(MAX_GPUS, MAX_NICS))
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        # Listing every tie would be 1024 x 2047 NIC names (~40 MB); 64 per GPU is ~3 MB in all.
        self.assertLess(len(r.stdout), 8 << 20)
        doc = json.loads(r.stdout)
        validate_doc(doc, "topo.schema.json")
        gpus = doc["topo"]["gpus"]
        self.assertEqual(len(gpus), MAX_GPUS)
        for g in gpus:
            self.assertEqual(g["path_level"], "PHB")
            self.assertEqual(len(g["equally_near"]), EQUALLY_NEAR_LISTED)
            self.assertEqual(g["equally_near_left_out"], MAX_NICS - 1 - EQUALLY_NEAR_LISTED)

    def test_unknown_elements_under_the_cap_are_counted_not_listed(self):
        text = unknown_elements(1_000_000)
        unknown = text.count("<x/>")
        r, _ = self.topo(text)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertLess(len(r.stdout), 1 << 20)  # a note and a finding for each was 53 MB
        doc = json.loads(r.stdout)
        validate_doc(doc, "topo.schema.json")
        self.assertEqual(len(doc["topo"]["notes"]), NOTES_LISTED)
        self.assertEqual(doc["topo"]["notes"][0], "line 5: <x>: unknown element under <cpu> skipped")
        self.assertEqual(doc["topo"]["notes_left_out"], unknown - NOTES_LISTED)
        self.assertIn("%d more unknown elements/attributes skipped (not listed)"
                      % (unknown - NOTES_LISTED), [f["message"] for f in doc["findings"]])

    def test_fifteen_megabytes_of_unknown_elements_are_refused(self):
        r, path = self.topo(unknown_elements(15_000_000))
        self.assert_refused(r, path, "more than 262144 XML elements")

    def test_file_over_the_size_cap_names_its_size_and_the_cap(self):
        r, path = self.topo(unknown_elements((16 << 20) + 100))
        self.assert_refused(r, path, "%d bytes, over the 16 MiB cap" % ((16 << 20) + 100))

    def test_health_check_reports_an_oversized_nccl_topo_file_instead_of_dying(self):
        with tempfile.TemporaryDirectory() as root, \
                tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(gpus_and_nics(8000, 8000))
            f.flush()
            env = dict(os.environ, NCCL_TOPO_FILE=f.name)
            r = subprocess.run([FABCHECK, "node", "--json", "--sysroot", root], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=600, preexec_fn=limit_memory)
        self.assertIn(r.returncode, (0, 1), r.stdout[-2000:] + r.stderr[-2000:])
        doc = json.loads(r.stdout)
        self.assertIn("more than %d GPUs" % MAX_GPUS, doc["topo_file"]["error"])
        self.assertIn("topo_file.malformed", [x["code"] for x in doc["findings"]])

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
