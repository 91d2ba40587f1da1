"""experiments/tests/test_simtwin.py - the simulated twin's mapping (jiffyexp.simtwin): service
times shifted by the per-request overhead exactly where that is possible, refused where not;
a measured configuration's JIFFY_* settings become the matching jiffy-sim flags; bad
[experiment.sim] tables are refused naming the field; jiffy-sim's CSV rows read back as points,
shifted by base_us. Standard library only (CTest experiments.unit)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from jiffyexp import config, simtwin  # noqa: E402


def exp_with(sim, dist="bimodal:99.5:500ns:500us"):
    return {"experiment": [{
        "name": "e", "workload": "spin", "dist": dist, "slo_class": "short", "slo_p99_us": 200,
        "loads": [1000, 2000],
        "config": [{"server": "jiffy-synth", "policy": "twoq", "preempt": "deadline",
                    "quantum_us": 10, "name": "j"},
                   {"server": "synth-pthread", "threads": 4, "name": "p"}],
        "sim": sim}]}


class Overhead(unittest.TestCase):
    def test_bimodal_and_fixed_and_trimodal(self):
        self.assertEqual(simtwin.add_overhead("bimodal:99.5:500ns:500us", 8.0),
                         "bimodal:99.5:8.5000us:508.0000us")
        self.assertEqual(simtwin.add_overhead("fixed:10us", 1.5), "fixed:11.5000us")
        self.assertEqual(simtwin.add_overhead("trimodal:50:1us:40:10us:1ms", 1.0),
                         "trimodal:50:2.0000us:40:11.0000us:1001.0000us")
        self.assertEqual(simtwin.add_overhead("exp:10us", 0.0), "exp:10us")

    def test_random_times_are_refused(self):
        with self.assertRaises(simtwin.TwinError) as cm:
            simtwin.add_overhead("exp:10us", 1.0)
        self.assertIn("exp:10us", str(cm.exception))


class Mapping(unittest.TestCase):
    def test_flags(self):
        doc = config.parse("t", exp_with({"configs": ["j"], "overhead_us": 8.0,
                                          "calib": "c.json", "requests": 5000}))
        exp = doc["experiments"][0]
        cfg = exp["configs"][0]
        a = simtwin.sim_args(cfg, exp, exp["sim"], "/r")
        s = " ".join(a)
        for want in ("--cores 1", "--policy twoq", "--quantum 10us", "--arrival-worker 0",
                     "--mechanism measured:deadline", "--calib /r/c.json",
                     "--dist bimodal:99.5:8.5000us:508.0000us", "--requests 5000",
                     "--park-after 50us"):
            self.assertIn(want, s)

    def test_run_to_completion_has_no_mechanism(self):
        raw = exp_with({"configs": ["j"]})
        raw["experiment"][0]["config"][0]["preempt"] = "none"
        exp = config.parse("t", raw)["experiments"][0]
        self.assertNotIn("--mechanism", simtwin.sim_args(exp["configs"][0], exp, exp["sim"], "/"))


class Refusals(unittest.TestCase):
    def refused(self, sim, *words, dist="bimodal:99.5:500ns:500us"):
        with self.assertRaises(config.ConfigError) as cm:
            config.parse("t", exp_with(sim, dist))
        for w in words:
            self.assertIn(w, str(cm.exception))

    def test_unknown_config(self):
        self.refused({"configs": ["nope"]}, "nope")

    def test_peer_config(self):
        self.refused({"configs": ["p"]}, "not a Jiffy server")

    def test_unknown_field(self):
        self.refused({"configs": ["j"], "overhead": 3}, "overhead")

    def test_negative_base(self):
        self.refused({"configs": ["j"], "base_us": -1}, "base_us")

    def test_overhead_on_random_times(self):
        self.refused({"configs": ["j"], "overhead_us": 2.0}, "exp:5us", dist="exp:5us")


class ReadBack(unittest.TestCase):
    def test_rows_become_points(self):
        header = ("label,server,workload,dist,class,offered_rps,achieved_rps,count,lost,errors,"
                  "p50_us,p90_us,p99_us,p999_us,max_us,mean_us,slow_p50,slow_p99,slow_p999,"
                  "lag_p99_us,valid,mode,rate,sent,received,lag_max_us,run_s,cpu_s\n")
        row = ("e/j~sim,s,spin,d,{c},1000,1000,100,0,0,1.00,2.00,3.00,4.00,5.00,1.50,2,6,8,"
               "0.00,true,sim,{r},100,100,0.00,1.0,0.000\n")
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            f.write(header)
            for r in (1000, 2000):
                for c in ("short", "long", "overall"):
                    f.write(row.format(c=c, r=r))
            f.write(row.format(c="short", r=1000).replace("e/j~sim", "other"))
            f.flush()
            pts = simtwin.read_points(f.name, "e/j~sim", base_us=40.0)
        self.assertEqual([p["load"] for p in pts], [1000.0, 2000.0])
        self.assertEqual(set(pts[0]["classes"]), {"short", "long"})
        self.assertEqual(pts[0]["classes"]["short"]["p99_us"], 43.0)
        self.assertIsNone(pts[0]["classes"]["short"]["slow_p999"])
        self.assertTrue(pts[0]["valid"] and pts[0]["sim"])


if __name__ == "__main__":
    unittest.main()
