"""Every JSON document fabkit reads goes through common/json_read.h (parse_json, with its depth
limit): a raw nlohmann parse anywhere else in the project fails this test, naming file and line.

Scanned: the project's C++ sources (every folder but tests/, which parse the documents the
binaries under test printed, and build/venv folders). Allowed: common/json_read.cc, the helper,
and bench/json_read/json_read_bench.cc, which times the helper against the raw parse.
"""
import os
import re
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HELPER = os.path.join("common", "json_read.cc")
ALLOWED = {HELPER, os.path.join("bench", "json_read", "json_read_bench.cc")}
SKIP_TOP = {"tests", ".git", ".venv", "shared"}
SOURCE_EXT = (".cc", ".h", ".cpp", ".hpp", ".cu", ".cuh")
# Json::parse(, nlohmann::json::parse(, fabkit::Json::parse(, nlohmann::ordered_json::sax_parse(,
# basic_json<...>::accept(, json::from_cbor( ... : every nlohmann entry point that reads text or
# bytes into a value.
RAW = re.compile(
    r"\b(?:\w+::)*(?:Json|json|ordered_json|basic_json\s*<[^>]*>)\s*::\s*"
    r"(?:parse|sax_parse|accept|from_cbor|from_msgpack|from_ubjson|from_bjdata|from_bson)\s*\(")


def raw_reads_in(text):
    """(line number, line) of each raw read, ignoring // comments."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        if RAW.search(code):
            out.append((n, line.strip()))
    return out


def project_sources():
    for top in sorted(os.listdir(ROOT)):
        if top in SKIP_TOP or top.startswith("build") or not os.path.isdir(os.path.join(ROOT, top)):
            continue
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in sorted(files):
                if name.endswith(SOURCE_EXT):
                    yield os.path.join(dirpath, name)


class JsonReadsUseTheHelper(unittest.TestCase):
    def test_the_pattern_finds_every_spelling(self):
        for s in ["Json::parse(text)", "fabkit::Json::parse(t, nullptr, false)",
                  "nlohmann::json::parse(data, data + size)", "nlohmann::ordered_json::sax_parse(",
                  "json::accept(s)", "Json :: parse (x)", "nlohmann::json::from_cbor(v)",
                  "nlohmann::basic_json<std::map>::parse(x)"]:
            self.assertTrue(raw_reads_in(s), s)
        for s in ["parse_json(text, path)", "// Json::parse( in a comment", "parse_profile(text)",
                  "reports::report_from_json(j)", "histogram_from_json(j, w, n)"]:
            self.assertFalse(raw_reads_in(s), s)

    def test_no_raw_json_parse_outside_the_helper(self):
        scanned, found = 0, []
        for path in project_sources():
            rel = os.path.relpath(path, ROOT)
            with open(path, errors="replace") as f:
                text = f.read()
            scanned += 1
            if rel in ALLOWED:
                continue
            found += ["%s:%d: %s" % (rel, n, line) for n, line in raw_reads_in(text)]
        self.assertGreater(scanned, 100, "scanned almost nothing: is ROOT right? " + ROOT)
        self.assertEqual(found, [], "read JSON with parse_json (common/json_read.h), which limits "
                         "the nesting depth, instead of:\n" + "\n".join(found))

    def test_the_helper_exists(self):
        self.assertTrue(os.path.exists(os.path.join(ROOT, HELPER)))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
