"""fabcheck report and node --html, end to end with the real binary.

HTML: rendered in headless Chromium (Debian `chromium`), asserting on the DOM it builds (finding
codes, one busbw <svg> per measured transport with the link-rate line, the round-trip histogram of
each measured link with its bars adding up to the pings, the heat map's cells, the loss curve) and
on a screenshot that is not blank (distinct colours and non-white pixels, counted
by decoding the PNG with zlib; a blank page is checked to fail the same test). Prometheus: a strict
parser (prom_parser.py) and `promtool check metrics` when installed. Baselines (pair, node and
cluster reports): exit codes and the regression named with both figures.

Run: test_reports.py /path/to/fabcheck /path/to/source
"""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import prom_parser  # noqa: E402

FABCHECK = None
SRC = None


def fixture(rel):
    return os.path.join(SRC, "tests", "fixtures", rel)


def run(*argv, check_rc=None):
    p = subprocess.run([FABCHECK, *argv], capture_output=True, text=True, timeout=120)
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError("fabcheck %s: exit %d, wanted %d\nstdout: %s\nstderr: %s"
                             % (" ".join(argv), p.returncode, check_rc, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def png_pixels(path):
    """(width, height, set of colours, non-white fraction) of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours, nonwhite = set(), 0
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            px = bytes(line[x:x + 3])
            colours.add(px)
            if px != b"\xff\xff\xff":
                nonwhite += 1
        prev = line
    return width, height, colours, nonwhite / float(width * height)


class Histograms(html.parser.HTMLParser):
    """The latency histograms in a DOM (reports/chart/svg_histogram.h): per <svg class="chart
    histogram">, its label, data-samples, data-overflow, the data-count of each bar and the names of
    its marks, in document order."""

    def __init__(self, dom):
        super().__init__()
        self.found, self._cur = [], None
        self.feed(dom)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "histogram" in a.get("class", "").split():
            self._cur = {"label": a.get("aria-label"), "samples": int(a["data-samples"]),
                         "overflow": int(a["data-overflow"]), "bars": [], "marks": []}
            self.found.append(self._cur)
        elif self._cur is not None and tag == "rect" and a.get("class") == "bar":
            self._cur["bars"].append(int(a["data-count"]))
        elif self._cur is not None and tag == "line" and a.get("class") == "mark":
            self._cur["marks"].append(a["data-name"])

    def handle_endtag(self, tag):
        if tag == "svg":
            self._cur = None


def check_link_histograms(test, dom, pair_doc):
    """Every open link with a histogram is drawn, the chosen one first, its bars adding up to the
    pings with the overflow; median and p99 marked."""
    drawn = Histograms(dom).found
    links = [l for l in pair_doc["pair"]["links"] if l["status"] == "open"]
    test.assertTrue(links)
    test.assertEqual(len(drawn), len(links))
    test.assertTrue(drawn[0]["label"].endswith("(chosen)"), drawn[0]["label"])
    chosen = next(l for l in links if l["chosen"])
    h = drawn[0]
    test.assertGreater(len(h["bars"]), 0)
    test.assertTrue(all(c > 0 for c in h["bars"]))
    test.assertEqual(sum(h["bars"]) + h["overflow"], chosen["pings"])
    test.assertEqual(h["samples"], chosen["pings"])
    test.assertEqual(sum(chosen["rtt_histogram"]["counts"]) + chosen["rtt_histogram"]["overflow"], chosen["pings"])
    test.assertEqual(len(h["bars"]), sum(1 for c in chosen["rtt_histogram"]["counts"] if c > 0))
    test.assertEqual([m.split()[0] for m in h["marks"]], ["median", "p99"])


class Chromium:
    """Headless Chromium with no network and a throw-away profile."""

    def __init__(self, tmp):
        self.exe = shutil.which("chromium") or shutil.which("chromium-browser")
        self.profile = os.path.join(tmp, "chromium-profile")
        self.reason = None
        if not self.exe:
            self.reason = "chromium is not installed (Debian package chromium)"
            return
        probe = os.path.join(tmp, "probe.html")
        with open(probe, "w") as f:
            f.write("<p id=x>ok</p>")
        try:
            out = self.dump_dom(probe)
            if 'id="x"' not in out:
                self.reason = "chromium started but rendered nothing: %r" % out[:300]
        except (subprocess.SubprocessError, OSError) as e:
            self.reason = "chromium cannot start: %s" % e

    def _argv(self, *extra):
        return [self.exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--no-first-run", "--user-data-dir=" + self.profile, *extra]

    def dump_dom(self, path):
        p = subprocess.run(self._argv("--dump-dom", "file://" + path), capture_output=True,
                           text=True, timeout=90, check=True)
        return p.stdout

    def screenshot(self, path, png, size="1200,2400"):
        subprocess.run(self._argv("--screenshot=" + png, "--window-size=" + size, "file://" + path),
                       capture_output=True, text=True, timeout=90, check=True)
        return png


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fabkit-reports-")
        cls.node_json = os.path.join(cls.tmp, "node.json")
        p = run("node", "--json")
        assert p.returncode in (0, 1), p.stderr
        with open(cls.node_json, "w") as f:
            f.write(p.stdout)
        cls.node = json.loads(p.stdout)
        cls.metrics = os.path.join(cls.tmp, "metrics.jsonl")
        with open(cls.metrics, "w") as f:
            for s in range(1, 31):
                f.write(json.dumps({"step": s, "total_steps": 30, "epoch": 0, "loss": 6.0 - 0.12 * s,
                                    "lr": 3e-4, "grad_norm": 1.0, "tokens": 4096,
                                    "tokens_per_s": 9000 + 50 * (s % 7), "step_time_ms": 450.0}) + "\n")
                if s % 10 == 0:
                    f.write(json.dumps({"step": s, "valid_loss": 6.2 - 0.12 * s, "valid_perplexity": 9.0}) + "\n")
        cls.chromium = Chromium(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    # --- HTML -----------------------------------------------------------------------------
    def render_all(self):
        out = self.path("all.html")
        pair = fixture("reports/pair-netns-veth.json")
        run("report", "--html", out, self.node_json, pair, fixture("reports/cluster-4-hosts.json"),
            self.metrics, fixture("profile/cluster-ib.json"), check_rc=0)
        return out

    def test_html_is_self_contained(self):
        with open(self.render_all()) as f:
            html = f.read()
        for bad in ("<script", "src=", "<link", "@import", "url("):
            self.assertNotIn(bad, html)
        # The only URL is the SVG namespace, an identifier that nothing fetches.
        self.assertEqual(html.count("://"), html.count('xmlns="http://www.w3.org/2000/svg"'))
        self.assertIn("default-src 'none'", html)  # and the page forbids fetching anyway

    def test_html_in_chromium_shows_findings_and_charts(self):
        if self.chromium.reason:
            self.skipTest(self.chromium.reason)
        dom = self.chromium.dump_dom(self.render_all())
        for f in self.node["findings"]:
            self.assertIn(f["code"], dom)
        with open(fixture("reports/pair-netns-veth.json")) as f:
            pair = json.load(f)
        measured = [t["transport"] for t in pair["pair"]["transports"] if t["sizes"]]
        self.assertEqual(len(measured), 3)
        for t in measured:
            self.assertIn('aria-label="busbw vs message size — %s"' % t, dom)
        self.assertEqual(dom.count('data-name="link rate 10 Gbit/s"'), 3)
        self.assertEqual(dom.count('class="cell"'), 16)  # 4 x 4 heat map
        self.assertIn("cluster.pair_slow", dom)
        self.assertIn('aria-label="loss per step"', dom)
        self.assertIn('aria-label="throughput per step"', dom)
        self.assertIn("NCCL_IB_HCA", dom)  # the profile's settings
        check_link_histograms(self, dom, pair)
        # The hand-written cluster fixture has no histograms: said so, and its medians listed.
        self.assertIn("no latency samples in this report", dom)
        self.assertIn('class="rtt-pairs"', dom)
        self.assertGreaterEqual(dom.count("<svg"), 3 + 1 + 1 + 2)

    def test_screenshot_is_not_blank(self):
        if self.chromium.reason:
            self.skipTest(self.chromium.reason)
        w, h, colours, nonwhite = png_pixels(self.chromium.screenshot(self.render_all(), self.path("all.png")))
        self.assertEqual((w, h), (1200, 2400))
        # Text, tables, series and the heat map: hundreds of colours (anti-aliasing), well over 1%
        # of the pixels not white.
        self.assertGreater(len(colours), 50)
        self.assertGreater(nonwhite, 0.05)
        # The same measure on an empty page must say blank, or the assertions above prove nothing.
        blank = self.path("blank.html")
        with open(blank, "w") as f:
            f.write("<html><body style='background:#fff'></body></html>")
        _, _, bc, bnw = png_pixels(self.chromium.screenshot(blank, self.path("blank.png"), "400,300"))
        self.assertLessEqual(len(bc), 2)
        self.assertLess(bnw, 0.01)

    def test_node_writes_html_and_report_writes_its_prom(self):
        html, prom = self.path("node.html"), self.path("node.prom")
        p = run("node", "--html", html)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(html) as f:
            page = f.read()
        for f_ in self.node["findings"]:
            self.assertIn(f_["code"], page)
        run("report", "--prom", prom, self.node_json, check_rc=0)
        with open(prom) as f:
            fams = prom_parser.parse(f.read())
        self.check_promtool(prom)
        counts = {s[0]["severity"]: s[1] for s in fams["fabkit_node_findings"]["samples"]}
        summary = self.node["summary"]
        self.assertEqual(counts, {"fail": summary["fail"], "warn": summary["warn"], "info": summary["info"]})
        soft = self.node["limits"]["memlock_bytes"]["soft"]
        got = {s[0]["limit"]: s[1] for s in fams["fabkit_node_memlock_limit_bytes"]["samples"]}
        self.assertEqual(got["soft"], float("inf") if soft == "unlimited" else soft)
        self.assertEqual(fams["fabkit_node_gpus"]["samples"][0][1], self.node["gpus"]["count"])
        for name, f_ in fams.items():
            self.assertEqual(f_["type"], "gauge", name)
            self.assertTrue(f_["help"], name)

    def test_pair_html_from_a_real_run_between_netns_hosts(self):
        sys.path.insert(0, os.path.join(SRC, "tests", "integration", "netns"))
        import netns
        ok, why = netns.have_root_and_netns()
        if not ok:
            self.skipTest(why)
        html = self.path("pair.html")
        with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            p = subprocess.run(["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *w.hosts, "--launcher",
                                "ip netns exec {host}", "--json", "--html", html, "--sizes", "64K,1M",
                                "--iters", "3", "--warmup-iters", "1", "--pings", "100",
                                "--bandwidth-ms", "100", "--transports", "raw-exchange,gloo-tcp"],
                               capture_output=True, text=True, timeout=180)
        self.assertIn(p.returncode, (0, 1), p.stderr[-2000:])
        doc = json.loads(p.stdout)
        with open(html) as f:
            page = f.read()
        for t in doc["pair"]["transports"]:
            self.assertEqual(t["status"], "ok", t)
            self.assertIn('aria-label="busbw vs message size — %s"' % t["transport"], page)
        for f_ in doc["findings"]:
            self.assertIn(f_["code"], page)
        for l in doc["pair"]["links"]:
            if l["status"] == "open":
                self.assertEqual(l["pings"], 100)
        if self.chromium.reason:
            self.skipTest("the page was written; the DOM checks need Chromium: " + self.chromium.reason)
        check_link_histograms(self, self.chromium.dump_dom(html), doc)

    # --- Prometheus --------------------------------------------------------------------------
    def check_promtool(self, path):
        promtool = shutil.which("promtool")
        if not promtool:
            return  # the strict parser above still ran
        with open(path) as f:
            p = subprocess.run([promtool, "check", "metrics"], stdin=f, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_prom_of_a_pair_report(self):
        out = self.path("pair.prom")
        run("report", "--prom", out, fixture("reports/pair-netns-veth.json"), check_rc=0)
        with open(out) as f:
            fams = prom_parser.parse(f.read())
        self.check_promtool(out)
        with open(fixture("reports/pair-netns-veth.json")) as f:
            pair = json.load(f)["pair"]
        got = {(s[0]["transport"], int(s[0]["bytes"])): s[1]
               for s in fams["fabkit_pair_busbw_bytes_per_second"]["samples"]}
        want = {(t["transport"], s["bytes"]): s["busbw_gbps"] * 1e9
                for t in pair["transports"] for s in t["sizes"]}
        self.assertEqual(set(got), set(want))
        for k in want:
            self.assertAlmostEqual(got[k], want[k], delta=abs(want[k]) * 1e-12)
        rates = {s[0]["transport"]: s[1] for s in fams["fabkit_pair_link_rate_bytes_per_second"]["samples"]}
        self.assertEqual(rates["gloo-tcp"], 10e9 / 8)  # 10 Gbit/s

    def test_prom_of_a_cluster_report(self):
        out = self.path("cluster.prom")
        src = fixture("reports/cluster-4-hosts.json")
        run("report", "--prom", out, src, check_rc=0)
        with open(out) as f:
            fams = prom_parser.parse(f.read())
        self.check_promtool(out)
        with open(src) as f:
            c = json.load(f)["cluster"]
        got = {(s[0]["host_a"], s[0]["host_b"]): s[1]
               for s in fams["fabkit_cluster_pair_bandwidth_bytes_per_second"]["samples"]}
        want = {(p["a"], p["b"]): p["gbit_s"] * 1e9 / 8 for p in c["matrix"]["pairs"] if p["gbit_s"] is not None}
        self.assertEqual(got, want)
        slow = {s[0]["host"]: s[1] for s in fams["fabkit_cluster_node_slow"]["samples"]}
        self.assertEqual(slow, {n["host"]: 1.0 if n["slow"] else 0.0 for n in c["nodes"]})
        states = {(s[0]["host_a"], s[0]["host_b"], s[0]["state"]) for s in fams["fabkit_cluster_pair_state"]["samples"]}
        self.assertEqual(states, {(p["a"], p["b"], p["state"]) for p in c["matrix"]["pairs"]})

    def test_prom_and_html_of_a_gpu_node_report(self):
        """The GPU health families of a node report (the NVML fake's 8x H100 with a fault on
        GPUs 1-7) through the strict parser and promtool; the node page's GPU table."""
        src = fixture("reports/node-h100-faults.json")
        out, html = self.path("gpu-node.prom"), self.path("gpu-node.html")
        run("report", "--prom", out, "--html", html, src, check_rc=0)
        with open(out) as f:
            fams = prom_parser.parse(f.read())
        self.check_promtool(out)
        with open(src) as f:
            devices = json.load(f)["gpus"]["devices"]
        reasons = {(s[0]["gpu"], s[0]["reason"]): s[1]
                   for s in fams["fabkit_node_gpu_clocks_event_reason"]["samples"]}
        for d in devices:
            c = d["health"]["clocks_event_reasons"]
            if c is None:
                continue
            for (gpu, reason), v in reasons.items():
                if gpu == str(d["index"]):
                    self.assertEqual(v, 1.0 if reason in c["reasons"] else 0.0, (gpu, reason))
        links = {(s[0]["gpu"], s[0]["link"]): s[1] for s in fams["fabkit_node_gpu_nvlink_active"]["samples"]}
        self.assertEqual(links[("5", "7")], 0.0)
        self.assertEqual(sum(1 for v in links.values() if v == 0.0), 1)
        with open(html) as f:
            page = f.read()
        self.assertIn("GPU health (NVML)", page)
        self.assertIn("gpu.remap_pending", page)

    def test_strict_parser_rejects_what_it_should(self):
        for bad in ('x{a="b} 1\n', "x 1\nx 2\n", 'x{a="\\q"} 1\n', "x one\n", "x 1",
                    "# TYPE x gauge\nx 1\n# HELP x late\n", "x 1\ny 1\nx 2\n"):
            with self.assertRaises(prom_parser.PromError, msg=repr(bad)):
                prom_parser.parse(bad)
        self.assertEqual(prom_parser.parse('x{a="q\\"\\n"} +Inf\n')["x"]["samples"], [({"a": 'q"\n'}, float("inf"))])

    # --- baselines -------------------------------------------------------------------------
    def test_baseline_same_run_passes_and_a_slower_one_fails_by_name(self):
        pair = fixture("reports/pair-netns-veth.json")
        run("report", "--baseline", pair, pair, "--expect-link-fraction", "0", check_rc=0)
        with open(pair) as f:
            doc = json.load(f)
        for t in doc["pair"]["transports"]:
            if t["transport"] == "gloo-tcp":
                for s in t["sizes"]:
                    s["busbw_gbps"] *= 0.5
        slow = self.path("slow.json")
        with open(slow, "w") as f:
            json.dump(doc, f)
        p = run("report", "--baseline", pair, slow, "--expect-link-fraction", "0", check_rc=1)
        self.assertRegex(p.stdout, r"FAIL +baseline.busbw_regression +gloo-tcp: ")
        self.assertIn("16 MiB", p.stdout)
        self.assertIn("REGRESSED", p.stdout)
        p = run("report", "--baseline", pair, slow, "--expect-link-fraction", "0", "--json", check_rc=1)
        j = json.loads(p.stdout)
        self.assertEqual(j["kind"], "baseline")
        try:
            import jsonschema
        except ImportError:
            jsonschema = None
        if jsonschema:  # the documented envelope (docs/schema/report.schema.json)
            with open(os.path.join(SRC, "docs", "schema", "report.schema.json")) as f:
                jsonschema.validate(j, json.load(f))
        rows = [r for r in j["baseline"]["sizes"] if r["regressed"]]
        self.assertEqual({r["transport"] for r in rows}, {"gloo-tcp"})
        self.assertTrue(all(abs(r["change_pct"] + 50) < 1e-6 for r in rows))
        # Within a 60% threshold the same halving passes.
        run("report", "--baseline", pair, slow, "--expect-link-fraction", "0", "--regression-pct", "60", check_rc=0)

    def test_node_baseline_names_a_port_that_went_down(self):
        run("report", "--baseline", self.node_json, self.node_json, check_rc=0)  # this machine, twice
        ib = fixture("profile/node-gpu-ib-01.json")
        with open(ib) as f:
            doc = json.load(f)
        doc["rdma"]["devices"][1]["ports"][0]["state"] = "DOWN"
        down = self.path("node-down.json")
        with open(down, "w") as f:
            json.dump(doc, f)
        p = run("report", "--baseline", ib, down, check_rc=1)
        self.assertRegex(p.stdout, r"FAIL +baseline.port_lost +mlx5_1:1: ")
        j = json.loads(run("report", "--baseline", ib, down, "--json", check_rc=1).stdout)
        ports = {x["port"]: x for x in j["node_baseline"]["ports"]}
        self.assertEqual((ports["mlx5_1:1"]["old_state"], ports["mlx5_1:1"]["new_state"]), ("ACTIVE", "DOWN"))

    def test_cluster_baseline_names_the_slower_pair_with_both_figures(self):
        cluster = fixture("reports/cluster-4-hosts.json")
        # The fixture against itself: nothing changed. Its own slow pair (node02<->node04, half
        # the median) is the expected-figure check's, turned off here and tested below.
        run("report", "--baseline", cluster, cluster, "--expect-median-pct", "0", check_rc=0)
        with open(cluster) as f:
            doc = json.load(f)
        for p in doc["cluster"]["matrix"]["pairs"]:
            if {p["a"], p["b"]} == {"node01", "node03"}:
                p["gbit_s"] = 60.0  # was 95.8
                p["a"], p["b"] = p["b"], p["a"]  # matched by names, not order
        degraded = self.path("cluster-degraded.json")
        with open(degraded, "w") as f:
            json.dump(doc, f)
        p = run("report", "--baseline", cluster, degraded, "--expect-median-pct", "0", check_rc=1)
        self.assertRegex(p.stdout, r"FAIL +baseline\.cluster_pair_regression +node03<->node01: "
                                   r"bandwidth 95\.8 → 60 Gbit/s \(-37\.4%\)")
        self.assertRegex(p.stdout, r"node03<->node01 +95\.800 +60\.000 +-37\.4%.*REGRESSED")
        j = json.loads(run("report", "--baseline", cluster, degraded, "--json", check_rc=1).stdout)
        self.assertEqual(j["kind"], "baseline")
        try:
            import jsonschema
        except ImportError:
            jsonschema = None
        if jsonschema:
            with open(os.path.join(SRC, "docs", "schema", "report.schema.json")) as f:
                jsonschema.validate(j, json.load(f))
        cb = j["cluster_baseline"]
        self.assertEqual([(r["a"], r["b"], r["old_gbit_s"], r["new_gbit_s"]) for r in cb["pairs"] if r["regressed"]],
                         [("node03", "node01", 95.8, 60.0)])
        self.assertEqual({(f["code"], f["subject"]) for f in j["findings"]},
                         {("baseline.cluster_pair_regression", "node03<->node01"),
                          ("baseline.cluster_pair_below_median", "node02<->node04"),
                          ("baseline.cluster_pair_below_median", "node03<->node01")})
        run("report", "--baseline", cluster, degraded, "--expect-median-pct", "0", "--regression-pct", "40",
            check_rc=0)
        # Mixed kinds: a usage error naming both files and their kinds.
        pair = fixture("reports/pair-netns-veth.json")
        p = run("report", "--baseline", pair, cluster, check_rc=2)
        self.assertIn(pair + " is a pair report, " + cluster + " a cluster report", p.stderr)

    # --- saved reports as text ------------------------------------------------------------
    def test_saved_reports_print_as_text_with_aligned_tables(self):
        pair = fixture("reports/pair-netns-veth.json")
        cluster = fixture("reports/cluster-4-hosts.json")
        with open(cluster) as f:
            cluster_doc = json.load(f)
        p = run("report", pair, cluster)
        # Exit: the worst the saved findings imply, as the commands that wrote them exited.
        self.assertEqual(p.returncode, cluster_doc["summary"]["exit_code"], p.stdout + p.stderr)
        self.assertNotIn("\033", p.stdout)  # not a terminal: no color
        lines = p.stdout.splitlines()
        # The pair's links table: every figure ends in the column its header ends in.
        head = next(i for i, l in enumerate(lines) if "rtt_p50_us" in l)
        end = lines[head].index("rtt_p50_us") + len("rtt_p50_us")
        rows = lines[head + 1:lines.index("", head)]
        self.assertTrue(rows)
        for r in rows:
            self.assertRegex(r[:end], r"[0-9-]$", r)
            self.assertEqual(r[end], " ", r)
        self.assertIn("all-reduce transports", p.stdout)
        # A transport that measured nothing has no figures, not zeros.
        # Its "via" is unknown too (and this report predates the column): "-".
        self.assertRegex(p.stdout, r"\n  gloo-ibverbs +- +unavailable +- +- +- +-\n")
        # A report made before the RDMA row was recorded prints none rather than a guess.
        self.assertNotIn("RDMA row", p.stdout)
        # The cluster's nodes and matrix, and one line per finding with its fix.
        self.assertRegex(p.stdout, r"\n  host +check +score_Gb/s +low/pairs +state\n")
        for h in cluster_doc["cluster"]["hosts"]:
            self.assertRegex(p.stdout, r"\n  %s +" % h)
        for f in cluster_doc["findings"]:
            line = next((l for l in lines if f["code"] in l and l.lstrip().startswith(f["severity"].upper())), None)
            self.assertIsNotNone(line, f["code"])
            if f["fix"]:
                self.assertIn("; fix: " + f["fix"], line)
        # A profile is not a report; a section of the wrong shape names the file; neither prints.
        p = run("report", fixture("profile/cluster-ib.json"), check_rc=2)
        self.assertIn("give --html FILE", p.stderr)
        bad = self.path("bad-cluster.json")
        cluster_doc["cluster"]["nodes"][0]["pairs_low"] = "three"
        with open(bad, "w") as f:
            json.dump(cluster_doc, f)
        p = run("report", pair, bad, check_rc=2)
        self.assertIn(bad, p.stderr)
        self.assertEqual(p.stdout, "")
        # Hand-edited files with members missing or of another kind: a report or an error naming
        # the file, never a crash (the renderers never index a missing member).
        with open(pair) as f:
            pair_doc = json.load(f)
        mutations = [lambda d: d["cluster"].pop("matrix"), lambda d: d["cluster"].pop("schedule"),
                     lambda d: d["cluster"].update(nodes=[{}]), lambda d: d["pair"]["links"][0].pop("a"),
                     lambda d: d["pair"].update(transports="x"), lambda d: d["pair"].pop("hosts"),
                     lambda d: d["pair"].update(rdma_rc={"status": "ran", "pairs": [{}]})]
        for i, mutate in enumerate(mutations):
            with open(cluster) as f:
                doc = json.load(f) if i < 3 else json.loads(json.dumps(pair_doc))
            mutate(doc)
            edited = self.path("edited-%d.json" % i)
            with open(edited, "w") as f:
                json.dump(doc, f)
            p = run("report", edited)
            self.assertIn(p.returncode, (0, 1, 2), "case %d: %s" % (i, p.stderr))
            if p.returncode == 2:
                self.assertIn(edited, p.stderr)
                self.assertEqual(p.stdout, "")

    # --- bad input ------------------------------------------------------------------------
    def test_pair_without_gpus_shows_the_rdma_row_beside_the_socket_rows(self):
        # A real run between two soft-RoCE VMs (tests/vm; regen_pair_rxe.py): no GPU, so no NCCL;
        # gloo-ibverbs is the RDMA row, on the rxe port over the interface the socket rows used.
        p = run("report", fixture("reports/pair-rxe-vms.json"))
        self.assertRegex(p.stdout, r"\n  transport +via +status +peak_busbw_GB/s ")
        self.assertRegex(p.stdout, r"\n  gloo-ibverbs +rxe0:1 \(eth0\) <-> rxe0:1 \(eth0\), RoCE +ok +0\.[0-9]+ +65536 ")
        for name in ("fabkit-socket", "gloo-tcp"):
            self.assertRegex(p.stdout, r"\n  %s +eth0 <-> eth0 +ok +0\.[0-9]+ +65536 " % name)
        line = next(l for l in p.stdout.splitlines() if l.startswith("RDMA row: "))
        self.assertIn("gloo-ibverbs on rxe0:1 (eth0) <-> rxe0:1 (eth0), RoCE", line)
        self.assertIn("the RDMA all-reduce that needs no GPU", line)
        self.assertIn("NCCL's RDMA transports are not in the agents' fabcheck build", line)
        self.assertIn("so the rows compare transports on one link", line)
        # The same document's JSON says it too, for scripts.
        with open(fixture("reports/pair-rxe-vms.json")) as f:
            doc = json.load(f)
        self.assertEqual("gloo-ibverbs", doc["pair"]["rdma_allreduce"]["transport"])

    def test_bad_inputs_exit_2_naming_the_file_and_leave_no_output(self):
        junk = self.path("junk.txt")
        with open(junk, "w") as f:
            f.write("not json\n")
        out = self.path("never.html")
        p = run("report", "--html", out, self.node_json, junk, check_rc=2)
        self.assertIn(junk + ": unknown input", p.stderr)
        self.assertFalse(os.path.exists(out))
        p = run("report", "--html", "/nonexistent-dir/x.html", self.node_json, check_rc=2)
        self.assertIn("/nonexistent-dir", p.stderr)
        html_ok = self.path("ok.html")
        p = run("report", "--html", html_ok, "--prom", "/nonexistent-dir/x.prom", self.node_json, check_rc=2)
        self.assertFalse(os.path.exists(html_ok))  # nothing written when one output cannot be
        p = run("node", "--html", "/nonexistent-dir/n.html", check_rc=2)
        self.assertIn("--html /nonexistent-dir/n.html", p.stderr)
        p = run("report", "--prom", self.path("p.prom"), self.node_json, self.metrics, check_rc=2)
        self.assertIn("one report", p.stderr)
        p = run("report", "--prom", self.path("p.prom"), self.metrics, check_rc=2)
        self.assertIn("--prom reads a node, pair or cluster report", p.stderr)
        p = run("report", "--baseline", self.node_json, fixture("reports/pair-netns-veth.json"), check_rc=2)
        self.assertIn(self.node_json, p.stderr)
        p = run("report", "--baseline", junk, junk, "--json", check_rc=2)
        self.assertEqual(json.loads(p.stdout)["error"]["exit_code"], 2)
        run("report", "--json", self.node_json, check_rc=2)  # nothing asked for
        self.assertFalse(os.path.exists(self.path("p.prom")))


if __name__ == "__main__":
    FABCHECK, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
