#!/usr/bin/python3
"""netns_scale.py's verdict: right only when the shaped link is named and nothing else is blamed
(no netns, no build artefact needed)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_scale  # noqa: E402


def finding(code, subject):
    return {"code": code, "subject": subject, "severity": "fail"}


class VerdictTest(unittest.TestCase):
    def test_named_link_and_nothing_else_is_right(self):
        doc = {"findings": [finding("cluster.link_slow", "h0<->h1"),
                            finding("cluster.link_search_found", "h1<->h0"),
                            finding("cluster.drift_mtu", "h3")]}
        right, why = netns_scale.verdict(doc, "h0", "h1")
        self.assertTrue(right, why)
        self.assertIn("h0<->h1", why)

    def test_link_not_named_is_wrong(self):
        right, why = netns_scale.verdict({"findings": []}, "h0", "h1")
        self.assertFalse(right)
        self.assertIn("was not named", why)

    def test_a_healthy_node_or_link_blamed_beside_it_is_wrong(self):
        for extra in (finding("cluster.node_slow", "h4"), finding("cluster.link_slow", "h2<->h3"),
                      finding("cluster.link_failed", "h0<->h5")):
            doc = {"findings": [finding("cluster.link_slow", "h0<->h1"), extra]}
            right, why = netns_scale.verdict(doc, "h0", "h1")
            self.assertFalse(right, extra)
            self.assertIn(extra["subject"], why)

    def test_a_link_sharing_one_end_is_not_the_shaped_link(self):
        self.assertFalse(netns_scale.names_link("h0<->h10", "h0", "h1"))
        self.assertTrue(netns_scale.names_link("h1<->h0", "h0", "h1"))


if __name__ == "__main__":
    unittest.main()
