"""experiments/tests/test_config.py - the sweep descriptions (jiffyexp.config): the presets in
experiments/configs/ parse; list-valued fields expand to one configuration per combination;
every kind of bad description is refused with a message naming the field. Standard library only
(CTest experiments.unit)."""

import glob
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from jiffyexp import config, servers  # noqa: E402


def base(**exp_over):
    exp = {"name": "e", "workload": "spin", "dist": "fixed:10us", "slo_class": "all",
           "slo_p99_us": 100, "loads": [1000, 2000],
           "config": [{"server": "jiffy-synth", "policy": "fifo", "preempt": "none"}]}
    exp.update(exp_over)
    return {"experiment": [exp]}


class Presets(unittest.TestCase):
    def test_every_preset_parses(self):
        files = glob.glob(os.path.join(HERE, "..", "configs", "*.toml"))
        self.assertTrue(files)
        for f in files:
            with self.subTest(f=os.path.basename(f)):
                doc = config.load(f)
                self.assertTrue(doc["experiments"])


class Expansion(unittest.TestCase):
    def test_lists_sweep_the_product(self):
        doc = config.parse("t", base(config=[{
            "server": "jiffy-synth", "policy": ["fifo", "twoq"], "preempt": "deadline",
            "quantum_us": [5, 10, 20]}]))
        names = [c["name"] for c in doc["experiments"][0]["configs"]]
        self.assertEqual(len(names), 6)
        self.assertIn("jiffy-synth-twoq-deadline-q20", names)

    def test_placeholders_in_names(self):
        doc = config.parse("t", base(config=[{
            "server": "jiffy-synth", "preempt": "deadline", "quantum_us": [5, 10],
            "name": "j-q{quantum_us}", "label": "Jiffy q={quantum_us} us"}]))
        cfgs = doc["experiments"][0]["configs"]
        self.assertEqual([c["name"] for c in cfgs], ["j-q5", "j-q10"])
        self.assertEqual(cfgs[1]["label"], "Jiffy q=10 us")
        self.assertTrue(all(c["preemptive"] for c in cfgs))

    def test_args_reach_the_command_line(self):
        doc = config.parse("t", base(config=[{
            "server": "jiffy-synth", "policy": "central", "preempt": "deadline",
            "quantum_us": [5, 10], "env": {"JIFFY_CENTRAL": "mq"},
            "args": ["--slo", "0=10,1=1000"], "name": "mq-q{quantum_us}"}]))
        exp = doc["experiments"][0]
        cfgs = exp["configs"]
        self.assertEqual([c["name"] for c in cfgs], ["mq-q5", "mq-q10"])  # args is not swept
        for c in cfgs:
            self.assertEqual(c["args"], ["--slo", "0=10,1=1000"])
            cmd = servers.SERVERS["jiffy-synth"].args(c, exp)
            # the harness's own flags (the 10 s SPIN cap) first, the configuration's last
            self.assertEqual(cmd, ["--port", "0", "--max-spin-us", "10000000",
                                   "--slo", "0=10,1=1000"])

    def test_args_default_and_kv(self):
        raw = base(workload="kv", slo_class="get",
                   config=[{"server": "jiffy-kv", "args": ["--slo", "get=20,scan=8300"]},
                           {"server": "jiffy-kv", "name": "plain"}])
        del raw["experiment"][0]["dist"]
        doc = config.parse("t", raw)
        exp = doc["experiments"][0]
        a, b = exp["configs"]
        self.assertEqual(servers.SERVERS["jiffy-kv"].args(a, exp),
                         ["--port", "0", "--resp-port", "0", "--keys", "100000",
                          "--slo", "get=20,scan=8300"])
        self.assertEqual(b["args"], [])
        self.assertEqual(servers.SERVERS["jiffy-kv"].args(b, exp)[-2:], ["--keys", "100000"])

    def test_spin_servers_lift_the_spin_cap(self):
        # a benchmark may ask for SPINs longer than the servers' 1 ms default cap
        doc = config.parse("t", base(config=[{"server": "synth-pthread", "threads": [2]}]))
        exp = doc["experiments"][0]
        for name in ("jiffy-synth", "synth-pthread", "go-synth", "tokio-synth"):
            cmd = servers.SERVERS[name].args(exp["configs"][0], exp)
            i = cmd.index("--max-spin-us")
            self.assertEqual(cmd[i + 1], "10000000", name)
        for name in ("jiffy-kv", "kv-pthread"):
            self.assertNotIn("--max-spin-us", servers.SERVERS[name].extra_args, name)

    def test_peers_are_not_preemptive(self):
        doc = config.parse("t", base(config=[{"server": "synth-pthread", "threads": [1, 8]}]))
        cfgs = doc["experiments"][0]["configs"]
        self.assertEqual([c["name"] for c in cfgs], ["synth-pthread-t1", "synth-pthread-t8"])
        self.assertFalse(any(c["preemptive"] for c in cfgs))


class Refusals(unittest.TestCase):
    def refused(self, raw, *words):
        with self.assertRaises(config.ConfigError) as cm:
            config.parse("t.toml", raw)
        msg = str(cm.exception)
        for w in words:
            self.assertIn(w, msg)
        return msg

    def test_unknown_server(self):
        self.refused(base(config=[{"server": "nginx"}]), "server", "nginx", "jiffy-synth")

    def test_server_of_the_wrong_workload(self):
        self.refused(base(config=[{"server": "jiffy-kv"}]), "jiffy-kv", "spin")

    def test_jiffy_field_on_a_peer(self):
        self.refused(base(config=[{"server": "go-synth", "preempt": "timer"}]), "preempt",
                     "go-synth")

    def test_peer_field_on_jiffy(self):
        self.refused(base(config=[{"server": "jiffy-synth", "threads": 4}]), "threads")

    def test_unknown_field(self):
        self.refused(base(config=[{"server": "jiffy-synth", "quantum": 10}]), "quantum")

    def test_loads_not_ascending(self):
        self.refused(base(loads=[2000, 1000]), "ascending")

    def test_bad_number(self):
        self.refused(base(config=[{"server": "jiffy-synth", "quantum_us": "ten"}]),
                     "quantum_us", "'ten'")

    def test_duplicate_names(self):
        self.refused(base(config=[{"server": "jiffy-synth", "quantum_us": [5, 10], "name": "x"}]),
                     "unique", "x")

    def test_bad_args(self):
        for bad in ("--slo 0=10", ["--slo", 10], [["--slo"]], {"slo": "0=10"}):
            with self.subTest(args=bad):
                self.refused(base(config=[{"server": "jiffy-synth", "args": bad}]),
                             "config #1", "args", "list of strings")
        self.refused(base(config=[{"server": "jiffy-synth", "args": ["--port", "7000"]}]),
                     "args", "--port", "set by the harness")

    def test_no_twin_of_what_jiffy_sim_would_not_see(self):
        raw = base(config=[{"server": "jiffy-synth", "args": ["--receivers", "2"], "name": "r"}])
        raw["experiment"][0]["sim"] = {"configs": ["r"]}
        self.refused(raw, "[experiment.sim]", "'r'", "cannot be twinned", "--slo")
        raw = base(config=[{"server": "jiffy-synth", "env": {"JIFFY_RR_SLICE_US": "5"},
                            "name": "e"}])
        raw["experiment"][0]["sim"] = {"configs": ["e"]}
        self.refused(raw, "'e'", "JIFFY_RR_SLICE_US")

    def test_mq_twin_maps_central_and_slo(self):
        from jiffyexp import simtwin
        raw = base(dist="bimodal:50:1us:100us",
                   config=[{"server": "jiffy-synth", "policy": "central", "preempt": "deadline",
                            "quantum_us": 10, "name": "mq", "args": ["--slo", "0=10,1=1000"],
                            "env": {"JIFFY_CENTRAL": "mq", "JIFFY_CENTRAL_PREEMPTED": "head"}}])
        raw["experiment"][0]["sim"] = {"configs": ["mq"]}
        doc = config.parse("t.toml", raw)
        exp = doc["experiments"][0]
        a = simtwin.sim_args(exp["configs"][0], exp, exp["sim"], "/r")
        self.assertEqual(a[a.index("--central") + 1], "mq")
        self.assertEqual(a[a.index("--central-preempted") + 1], "head")
        self.assertEqual(a[a.index("--slo") + 1], "short=10us,long=1000us")
        raw["experiment"][0]["config"][0]["args"] = ["--slo", "2=10"]  # no third class
        self.refused(raw, "'mq'", "2=10")

    def test_one_slo_bound(self):
        raw = base(slo_slow_p999=50)
        self.refused(raw, "exactly one of slo_p99_us", "slo_slow_p999")
        raw = base()
        del raw["experiment"][0]["slo_p99_us"]
        self.refused(raw, "exactly one")
        raw["experiment"][0]["slo_slow_p999"] = 50
        doc = config.parse("t.toml", raw)
        self.assertEqual(doc["experiments"][0]["slo_slow_p999"], 50)

    def test_colocation_pairs_name_configurations(self):
        raw = base(colocation=[["a", "b"]])
        self.refused(raw, "colocation", "pairs of configuration names")

    def test_missing_dist(self):
        raw = base()
        del raw["experiment"][0]["dist"]
        self.refused(raw, "dist")

    def test_kv_field_on_spin(self):
        self.refused(base(scan_n=100), "scan_n", "kv")

    def test_run_section(self):
        raw = base()
        raw["run"] = {"duration_s": 1.0, "warmup_s": 2.0}
        self.refused(raw, "warmup_s")
        raw["run"] = {"cpus": [0, 0]}
        self.refused(raw, "cpus")
        raw["run"] = {"repeats": 0}
        self.refused(raw, "repeats")

    def test_not_toml(self):
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
            f.write("[run\n")
            f.flush()
            with self.assertRaises(config.ConfigError) as cm:
                config.load(f.name)
            self.assertIn("not valid TOML", str(cm.exception))

    def test_missing_file(self):
        with self.assertRaises(config.ConfigError) as cm:
            config.load("/nonexistent/sweep.toml")
        self.assertIn("cannot read", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
