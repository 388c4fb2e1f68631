"""fabcheck pair --ship between netns hosts (issue #24): the controller's own binary travels
through the launcher's stdin into a private directory on each host, is checked (SHA-256) and run,
and the directory is gone afterwards; a copy damaged on the way is refused by name
(pair.ship_checksum_mismatch) and removed too, and so is a --ship-dir another user could swap
(pair.ship_unsafe_dir). And without --ship, an agent of another fabkit
version is refused with both versions named (pair.version_mismatch).

    test_pair_ship.py FABCHECK
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
import netns  # noqa: E402

FABCHECK = None
VERSION = None
FAST = ["--transports", "none", "--pings", "50", "--bandwidth-ms", "100", "--timeout-ms", "8000", "--json"]


def failed_steps(doc):
    return [s for s in doc["pair"]["steps"] if s["status"] == "failed"]


class PairShip(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The controller runs from a copy without debug sections (the installed form: a few MB
        # instead of the build tree's ~160 MB), in a directory the hosts never read.
        cls.tmp = tempfile.mkdtemp(prefix="fabkit-shiptest-")
        cls.controller = os.path.join(cls.tmp, "controller", "fabcheck")
        os.makedirs(os.path.dirname(cls.controller))
        subprocess.run(["objcopy", "--strip-debug", FABCHECK, cls.controller], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        ok, why = netns.have_root_and_netns()
        if not ok:
            self.skipTest(why)
        self.ship_dir = tempfile.mkdtemp(prefix="ship-", dir=self.tmp)

    def pair(self, w, launcher, *extra):
        argv = ["ip", "netns", "exec", w.ctl, self.controller, "pair", *w.hosts, "--launcher", launcher,
                *FAST, *extra]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        try:
            return r, json.loads(r.stdout)
        except ValueError:
            raise AssertionError("not JSON (exit %d): %s\n%s" % (r.returncode, r.stdout[:2000], r.stderr[-2000:]))

    def test_shipped_agents_run_and_their_copies_are_removed(self):
        with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            r, doc = self.pair(w, "ip netns exec {host}", "--ship", "--ship-dir", self.ship_dir)
            self.assertEqual([], failed_steps(doc), r.stderr[-2000:])
            for side in ("a", "b"):
                self.assertTrue(doc["pair"]["agents"][side]["agent_shipped"], doc["pair"]["agents"][side])
                self.assertEqual(VERSION, doc["pair"]["agents"][side]["agent_version"])
            self.assertEqual(w.addr(1), doc["pair"]["recommended"]["addr_b"])
        self.assertEqual([], os.listdir(self.ship_dir))

    def test_a_copy_damaged_on_the_way_is_refused_by_name_and_removed(self):
        launcher = "%s %s 100000 ip netns exec {host}" % (sys.executable, os.path.join(HERE, "corrupting_launcher.py"))
        with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            r, doc = self.pair(w, launcher, "--ship", "--ship-dir", self.ship_dir)
            failed = failed_steps(doc)
            self.assertEqual(1, len(failed), doc["pair"]["steps"])
            self.assertEqual("pair.ship_checksum_mismatch", failed[0]["code"], failed[0])
            self.assertEqual("hello", failed[0]["step"])
            self.assertIn("SHA-256", failed[0]["error"])
            codes = [f["code"] for f in doc["findings"]]
            self.assertIn("pair.ship_checksum_mismatch", codes)
            self.assertEqual(1, r.returncode)
        self.assertEqual([], os.listdir(self.ship_dir))

    def test_a_ship_dir_another_user_owns_is_refused_and_nothing_runs(self):
        # The copy is written, checked and run by path: the owner of --ship-dir could swap root's
        # private directory for theirs in between. The hosts refuse it before writing anything.
        os.chown(self.ship_dir, 65534, 65534)
        with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            r, doc = self.pair(w, "ip netns exec {host}", "--ship", "--ship-dir", self.ship_dir)
            failed = failed_steps(doc)
            self.assertEqual(1, len(failed), doc["pair"]["steps"])
            self.assertEqual("pair.ship_unsafe_dir", failed[0]["code"], failed[0])
            self.assertIn(self.ship_dir + " belongs to uid 65534", failed[0]["error"])
            finding = [f for f in doc["findings"] if f["code"] == "pair.ship_unsafe_dir"]
            self.assertEqual(1, len(finding), doc["findings"])
            self.assertIn(finding[0]["subject"], w.hosts)
            self.assertIn("--ship-dir", finding[0]["fix"])
            self.assertEqual(1, r.returncode)
        self.assertEqual([], os.listdir(self.ship_dir))

    def test_cluster_ships_to_its_node_checks_and_pair_runs(self):
        with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            argv = ["ip", "netns", "exec", w.ctl, self.controller, "cluster", *w.hosts, "--launcher",
                    "ip netns exec {host}", "--ship", "--ship-dir", self.ship_dir, "--transports", "none",
                    "--pings", "50", "--bandwidth-ms", "100", "--timeout-ms", "8000", "--json"]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=240)
            doc = json.loads(r.stdout)
            c = doc["cluster"]
            self.assertTrue(all(n["check"] == "ok" for n in c["nodes"]), c["nodes"])
            self.assertEqual(1, len(c["matrix"]["pairs"]), c["matrix"])
            self.assertTrue(c["matrix"]["pairs"][0]["ok"], c["matrix"]["pairs"][0])
        self.assertEqual([], os.listdir(self.ship_dir))

    def test_ship_refuses_agent_path(self):
        r = subprocess.run([self.controller, "pair", "a", "b", "--ship", "--agent-path", "/usr/bin/fabcheck"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(2, r.returncode)
        self.assertIn("--agent-path", r.stderr)

    def test_an_agent_of_another_version_is_refused_naming_both(self):
        # hostile_agent.py speaks the wire like a real agent; here it claims another release.
        with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            launcher = "%s %s launch %s %s 198.18.9.9 4444 {host} ip netns exec {host}" % (
                sys.executable, os.path.join(HERE, "hostile_agent.py"), w.hosts[1], w.addr(1))
            env = dict(os.environ, HOSTILE_VERSION="0.0.1")
            argv = ["ip", "netns", "exec", w.ctl, self.controller, "pair", *w.hosts, "--launcher", launcher, *FAST]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
            doc = json.loads(r.stdout)
            failed = failed_steps(doc)
            self.assertEqual(1, len(failed), doc["pair"]["steps"])
            self.assertEqual("pair.version_mismatch", failed[0]["code"])
            self.assertEqual(w.hosts[1], failed[0]["host"])
            self.assertIn("fabcheck 0.1.0".replace("0.1.0", VERSION), failed[0]["error"])
            self.assertIn("fabcheck 0.0.1", failed[0]["error"])


if __name__ == "__main__":
    FABCHECK = os.path.abspath(sys.argv[1])
    VERSION = subprocess.run([FABCHECK, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
