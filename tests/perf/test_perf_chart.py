"""scripts/perf-chart.py on a fixture of scripts/perf-compare.sh's JSON: the SVG is XML
that names every model and test, marks the roofline of each tg test, and the Markdown
table has each pair's ratio."""

import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "perf-chart.py")
FIXTURE = os.path.join(HERE, "fixture_compare.json")
SVG_NS = "{http://www.w3.org/2000/svg}"


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class PerfChartTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.svg = os.path.join(self.tmp.name, "chart.svg")
        self.md = os.path.join(self.tmp.name, "table.md")
        r = run(FIXTURE, "--svg", self.svg, "--md", self.md)
        self.assertEqual(r.returncode, 0, r.stderr)

    def tearDown(self):
        self.tmp.cleanup()

    def test_svg_is_xml_naming_models_and_tests(self):
        root = ET.parse(self.svg).getroot()
        self.assertEqual(root.tag, SVG_NS + "svg")
        texts = [t.text for t in root.iter(SVG_NS + "text")]
        for label in ("alpha-q8_0.gguf", "beta-f16.gguf", "pp128", "pp128 @ d512", "tg64", "tg64 @ d512",
                      "tokens/s", "inlay", "llama.cpp", "prompt processing", "generation"):
            self.assertIn(label, texts)
        title = " ".join(t for t in texts if t)
        self.assertIn("2 threads", title)
        self.assertIn("2026-01-02", title)
        self.assertIn("Fixture CPU 9000", title)
        self.assertIn("abc1234", title)
        # Ratio labels over the bars: 300 / 200 and 40 / 50; beta's tg has no llama.cpp row.
        for label in ("1.50x", "2.00x", "0.80x", "1.25x", "0.75x", "n/a"):
            self.assertIn(label, texts)
        # One roofline mark per tg test (three), each with its rate.
        roofs = [t.text for t in root.iter(SVG_NS + "title") if "roofline" in (t.text or "")]
        self.assertEqual(len(roofs), 3)
        self.assertTrue(any("100.0 t/s" in r for r in roofs))
        self.assertTrue(any("80.0 t/s" in r for r in roofs))
        self.assertTrue(any("20.0 t/s" in r for r in roofs))

    def test_table_rows_and_ratios(self):
        with open(self.md) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines[0].startswith("| model | test | inlay t/s | llama.cpp t/s |"))
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
        self.assertEqual(len(rows), 6)
        by = {(r[0], r[1]): r for r in rows}
        self.assertEqual(by[("alpha-q8_0.gguf", "pp128")][2:5], ["300.00", "200.00", "1.50x"])
        self.assertEqual(by[("alpha-q8_0.gguf", "pp128 @ d512")][4], "2.00x")
        self.assertEqual(by[("alpha-q8_0.gguf", "tg64")][4:6], ["0.80x", "40%"])
        self.assertEqual(by[("alpha-q8_0.gguf", "tg64 @ d512")][4:6], ["1.25x", "38%"])
        self.assertEqual(by[("beta-f16.gguf", "pp128")][4], "0.75x")
        self.assertEqual(by[("beta-f16.gguf", "tg64")][3:6], ["n/a", "n/a", "50%"])

    def test_bad_input_is_a_message(self):
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            f.write('{"models": []}')
        r = run(bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no models", r.stderr)
        r = run(os.path.join(self.tmp.name, "absent.json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("perf-chart:", r.stderr)


if __name__ == "__main__":
    unittest.main()
