"""perftest.py reads perftest's reports as perftest prints them (testdata/: ib_write_bw,
ib_write_lat and ib_send_lat run between two soft-RoCE VMs of tests/vm, perftest 4.5 from Debian
12), and refuses output without a result row rather than reading a number from elsewhere."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import perftest  # noqa: E402


def data(name):
    with open(os.path.join(HERE, "testdata", name)) as f:
        return f.read()


class PerftestReports(unittest.TestCase):
    def test_write_bandwidth_is_mib_per_second_converted_to_gbit(self):
        # 24.70 MB/s average in the file: perftest's MB is 2^20 bytes.
        self.assertAlmostEqual(24.70 * 1048576 * 8 / 1e9, perftest.parse_bw(data("ib_write_bw.txt")))

    def test_latency_is_t_typical(self):
        self.assertEqual(1422.0, perftest.parse_lat(data("ib_write_lat.txt")))
        self.assertEqual(7389.01, perftest.parse_lat(data("ib_send_lat.txt")))

    def test_output_without_a_result_row_is_refused(self):
        cut = "\n".join(data("ib_write_bw.txt").splitlines()[:22])  # the header, no row
        with self.assertRaises(ValueError):
            perftest.parse_bw(cut)
        with self.assertRaises(ValueError):
            perftest.parse_lat(data("ib_write_bw.txt"))


if __name__ == "__main__":
    unittest.main()
