"""The chart's optional monitoring objects (issue 35, B): the PrometheusRule with the agent's alerts
and the Grafana dashboard ConfigMap. Off by default, rendered when enabled; promtool checks the
rendered rule groups and runs unit tests of every alert on synthetic series; every metric the
alerts and the dashboard name is one the agent's C++ sources register (a static scan, so a rule
naming a metric no source registers fails here).

    cd tests/deploy && python3 -m unittest -v test_chart_monitoring

promtool comes from Debian's `prometheus` package (packaging/install-deps.sh): missing, the tests
that need it fail under CI (env CI set) and are skipped otherwise.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

from chart_tools import CHART, NAMESPACE, RELEASE, ROOT, render_text
from test_chart import ChartCase

PROMTOOL = os.environ.get("OKNA_PROMTOOL") or shutil.which("promtool") or "/usr/bin/promtool"
SOURCES = ["agent", "core", "k8s", "chassis", "metadata", "netns", "placement", "ovsdb"]
FULLNAME = "%s-openkeel-node-agent" % RELEASE
JOB = "%s/%s" % (NAMESPACE, FULLNAME)
ON = ["metrics.prometheusRule.enabled=true", "metrics.grafanaDashboard.enabled=true"]
README_SECTION = "Alerts and dashboard"


def registered_metrics():
    """Every metric name the agent's sources spell out ("okna_..." string literals)."""
    names = set()
    for top in SOURCES:
        for path in glob.glob(os.path.join(ROOT, top, "**", "*.cc"), recursive=True) + \
                glob.glob(os.path.join(ROOT, top, "**", "*.h"), recursive=True):
            with open(path, encoding="utf-8") as f:
                names.update(re.findall(r'"(okna_[a-z0-9_]+)"', f.read()))
    return names


KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
            "group_right", "inf", "nan"}


def metric_names(expr):
    """The metric names a PromQL expression selects: identifiers that are not functions, keywords,
    label names (in {...} or grouping clauses), durations or strings."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)                     # strings
    e = re.sub(r"\{[^}]*\}", "", e)                                   # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                                  # ranges, subqueries
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    names = set()
    for m in re.finditer(r"(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        if m.group(0).lower() in KEYWORDS or rest.startswith("("):
            continue
        names.add(m.group(0))
    return names


def base_name(name, known):
    """A histogram's series (_bucket, _sum, _count) by the name it is registered under."""
    stripped = re.sub(r"_(bucket|sum|count)$", "", name)
    return stripped if stripped in known else name


def monitoring_objects(sets=()):
    docs = [d for d in yaml.safe_load_all(render_text(sets=list(sets)).stdout) if d]
    rules = [d for d in docs if d["kind"] == "PrometheusRule"]
    dashboards = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")]
    return rules, dashboards


def alerts_of(rule):
    return {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}


def dashboard_exprs(board):
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    for var in board["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+), *\w+\)", var["definition"])
            assert m, var["definition"]
            exprs.append(m.group(1))
    return exprs


def promtool_missing():
    if os.access(PROMTOOL, os.X_OK):
        return None
    return "promtool is missing (%s): apt-get install prometheus (packaging/install-deps.sh)" % PROMTOOL


class TestRendering(ChartCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        (cls.rule,), (cls.cm,) = monitoring_objects(ON)
        cls.alerts = alerts_of(cls.rule)
        cls.board = json.loads(cls.cm["data"]["openkeel-node-agent.json"])

    def test_off_by_default_on_when_enabled(self):
        self.assertEqual(monitoring_objects(), ([], []))
        self.assertEqual(self.rule["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(self.rule["metadata"]["name"], FULLNAME)
        self.assertEqual(self.cm["metadata"]["labels"]["grafana_dashboard"], "1")
        self.assertEqual(self.cm["metadata"]["namespace"], NAMESPACE)
        self.assertEqual(sorted(self.alerts), sorted([
            "OpenkeelNodeAgentDown", "OpenkeelNodeAgentAbsent", "OpenkeelNodeAgentNotReady",
            "OpenkeelMetadataServerErrors", "OpenkeelMetadataConnectionsRefused", "OpenkeelMetadataNovaFailing",
            "OpenkeelPlacementFailing", "OpenkeelOvsdbReconnecting", "OpenkeelOvsdbOwnershipLost",
            "OpenkeelOvsVswitchdDown", "OpenkeelGatewayDrainStuck", "OpenkeelGatewayDrainTimedOut"]))

    def test_every_alert_has_for_severity_and_points_to_the_readme(self):
        with open(os.path.join(CHART, "README.md")) as f:
            readme = f.read()
        section = readme[readme.index("## " + README_SECTION):]
        section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
        for name, a in self.alerts.items():
            self.assertRegex(a["for"], r"^[0-9]+[smh]$", name)
            self.assertIn(a["labels"]["severity"], ("warning", "critical"), name)
            self.assertTrue(a["annotations"]["summary"], name)
            self.assertIn('Chart README, "%s", %s.' % (README_SECTION, name), a["annotations"]["description"])
            self.assertIn("`%s`" % name, section, "the README's section explains " + name)

    def test_values_shape_them(self):
        (rule,), (cm,) = monitoring_objects(ON + [
            "metrics.prometheusRule.labels.release=prom", "metrics.prometheusRule.alertLabels.team=cloud",
            "metrics.prometheusRule.job=node-agents", "metrics.grafanaDashboard.namespace=monitoring",
            "metrics.grafanaDashboard.annotations.grafana_folder=OpenKeel",
            "metrics.grafanaDashboard.labels.grafana_dashboard=null", "metrics.grafanaDashboard.labels.dash=yes"])
        self.assertEqual(rule["metadata"]["labels"]["release"], "prom")
        alerts = alerts_of(rule)
        self.assertEqual(alerts["OpenkeelNodeAgentDown"]["labels"], {"severity": "critical", "team": "cloud"})
        self.assertEqual(alerts["OpenkeelNodeAgentDown"]["expr"], 'up{job="node-agents"} == 0')
        self.assertEqual(cm["metadata"]["namespace"], "monitoring")
        self.assertEqual(cm["metadata"]["annotations"], {"grafana_folder": "OpenKeel"})
        self.assertNotIn("grafana_dashboard", cm["metadata"]["labels"])
        self.assertEqual(cm["metadata"]["labels"]["dash"], "yes")
        # Only the alerts of what runs; none for a downscaled fleet's absence.
        alerts = alerts_of(monitoring_objects(ON + ["metadata.enabled=false", "openstackPlacement.enabled=false",
                                                    "ovs.enabled=false", "forceDownscale=true"])[0][0])
        self.assertEqual(sorted(alerts), ["OpenkeelNodeAgentDown", "OpenkeelNodeAgentNotReady"])
        self.assertNotIn("okna_ovsdb", alerts["OpenkeelNodeAgentNotReady"]["expr"])

    def test_refused_without_metrics_or_with_a_bad_value(self):
        for sets in (["metrics.prometheusRule.enabled=true", "metrics.enabled=false"],
                     ["metrics.grafanaDashboard.enabled=true", "metrics.enabled=false"]):
            p = render_text(sets=sets, check=False)
            self.assertNotEqual(p.returncode, 0, sets)
            self.assertIn("needs metrics.enabled", p.stderr, sets)
        for bad in ("metrics.prometheusRule.alertLabels.severity=page", "metrics.prometheusRule.alertLabels.a-b=c",
                    "metrics.prometheusRule.enable=true", "metrics.grafanaDashboard.namespace=Not_A_Namespace",
                    "metrics.grafanaDashboard.labels.x[0]=1"):
            p = render_text(sets=[bad], check=False)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn("schema", p.stderr, bad)

    def test_pod_monitor_labels_series_with_the_node(self):
        docs = yaml.safe_load_all(render_text(sets=["metrics.podMonitor.enabled=true",
                                                    "metrics.exposeOnNode=true"]).stdout)
        pm = next(d for d in docs if d and d["kind"] == "PodMonitor")
        self.assertEqual(pm["spec"]["podMetricsEndpoints"][0]["relabelings"],
                         [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}])

    def test_drain_timeout_alert_uses_the_agents_buckets(self):
        # The largest of the agent's default buckets below ovs.drainTimeoutSeconds: a timed-out
        # drain observes at least the timeout, above that bucket.
        with open(os.path.join(ROOT, "core", "metrics.cc")) as f:
            body = re.search(r"durationBuckets\(\) \{\s*return \{([^}]*)\}", f.read()).group(1)
        buckets = [b.strip() for b in body.split(",")]
        with open(os.path.join(ROOT, "chassis", "chassis_reconciler.cc")) as f:
            self.assertRegex(f.read(), r'histogram\("okna_ovsdb_gateway_drain_seconds",\s*"[^"]*"\);',
                             "registered with the default buckets")
        for timeout in (120, 45, 30, 1):
            want = max((b for b in buckets if float(b) < timeout), key=float)
            alerts = alerts_of(monitoring_objects(ON + ["ovs.drainTimeoutSeconds=%d" % timeout])[0][0])
            self.assertIn('_bucket{le="%s"}' % want, alerts["OpenkeelGatewayDrainTimedOut"]["expr"], timeout)
            self.assertEqual(alerts["OpenkeelGatewayDrainStuck"]["for"], "%ds" % (timeout + 300))
        self.assertNotIn("OpenkeelGatewayDrainTimedOut",
                         alerts_of(monitoring_objects(ON + ["ovs.drainTimeoutSeconds=0"])[0][0]))

    def test_dashboard(self):
        self.assertEqual(self.board["uid"], "openkeel-node-agent")
        ids = [p["id"] for p in self.board["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        for p in self.board["panels"]:
            for t in p.get("targets", []):
                self.assertEqual(t["datasource"], {"type": "prometheus", "uid": "${datasource}"}, p["title"])
                self.assertIn('node=~"$node"', t["expr"], p["title"])


class TestMetricNames(ChartCase):
    """Alerts and dashboard name only what the agent exports."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.known = registered_metrics()
        (rule,), (cm,) = monitoring_objects(ON)
        cls.rule_exprs = [a["expr"] for a in alerts_of(rule).values()]
        cls.board_exprs = dashboard_exprs(json.loads(cm["data"]["openkeel-node-agent.json"]))

    def unknown(self, exprs):
        names = set().union(*(metric_names(e) for e in exprs))
        return sorted(n for n in names if n != "up" and base_name(n, self.known) not in self.known), names

    def test_the_scan_finds_the_agents_metrics(self):
        for name in ("okna_ovsdb_ownership_lost", "okna_k8s_informer_failing", "okna_metadata_requests_total",
                     "okna_ovsdb_transactions_total", "okna_ovsdb_gateway_drain_seconds"):
            self.assertIn(name, self.known)

    def test_the_extraction(self):
        self.assertEqual(metric_names(
            'sum without (code) (rate(okna_a_total{code=~"5..", x="okna_not"}[5m])) / ignoring (le) '
            'histogram_quantile(0.9, sum by (le) (rate(okna_b_bucket{node=~"$node"}[$__rate_interval]))) > 1e3 '
            'or label_replace(up == 0, "check", "x", "", "") unless kube_pod_info offset 5m'),
            {"okna_a_total", "okna_b_bucket", "up", "kube_pod_info"})
        self.assertEqual(base_name("okna_ovsdb_gateway_drain_seconds_count", self.known),
                         "okna_ovsdb_gateway_drain_seconds")
        # What this test exists for: a name no source registers, or another exporter's, fails.
        self.assertEqual(self.unknown(["rate(okna_metadata_requests_total[5m])",
                                       "okna_agent_ready == 0 or kube_daemonset_status_number_ready"])[0],
                         ["kube_daemonset_status_number_ready", "okna_agent_ready"])

    def test_rules_name_registered_metrics(self):
        unknown, names = self.unknown(self.rule_exprs)
        self.assertEqual(unknown, [])
        self.assertGreaterEqual(len(names), 10)

    def test_dashboard_names_registered_metrics(self):
        unknown, names = self.unknown(self.board_exprs)
        self.assertEqual(unknown, [])
        self.assertGreaterEqual(len(names), 25)


class TestPromtool(ChartCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        missing = promtool_missing()
        if missing:
            raise unittest.SkipTest(missing) if os.environ.get("CI") is None else AssertionError(missing)
        cls.tmp = tempfile.mkdtemp(prefix="okna-promtool-")
        (rule,), _ = monitoring_objects(ON)
        cls.groups = rule["spec"]["groups"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, "tmp", ""), ignore_errors=True)

    def promtool(self, *args):
        return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, cwd=self.tmp)

    def write(self, name, doc):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        return path

    def test_check_rules(self):
        for sets in ([], ["ovs.drainTimeoutSeconds=0", "forceDownscale=true"], ["metadata.enabled=false"]):
            (rule,), _ = monitoring_objects(ON + sets)
            path = self.write("rules.yaml", {"groups": rule["spec"]["groups"]})
            p = self.promtool("check", "rules", path)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("SUCCESS: %d rules found" % len(alerts_of(rule)), p.stdout)
        # And promtool does refuse a broken one.
        path = self.write("broken.yaml", {"groups": [{"name": "x", "rules": [{"alert": "A", "expr": "rate(x[5m]"}]}]})
        self.assertNotEqual(self.promtool("check", "rules", path).returncode, 0)

    def test_every_alert_fires_on_what_it_is_about(self):
        # Annotations are left out (promtool would compare their full text); `check rules` above
        # parses their templates.
        bare = [{"name": g["name"], "rules": [{k: v for k, v in r.items() if k != "annotations"}
                                              for r in g["rules"]]} for g in self.groups]
        self.write("bare.yaml", {"groups": bare})
        target = 'job="%s", instance="10.0.0.1:19875", node="compute-1"' % JOB
        t = {"job": JOB, "instance": "10.0.0.1:19875", "node": "compute-1"}

        def case(series, alert, at, fired, severity="warning"):
            return {"interval": "1m",
                    "input_series": [{"series": s % target, "values": v} for s, v in series],
                    "alert_rule_test": [{"eval_time": at, "alertname": alert,
                                         "exp_alerts": [{"exp_labels": dict(t, severity=severity, **f)}
                                                        for f in fired]}]}

        tests = [
            case([("up{%s}", "1 0x10")], "OpenkeelNodeAgentDown", "7m", [{}], "critical"),
            case([("up{%s}", "1x10")], "OpenkeelNodeAgentDown", "10m", []),
            {"interval": "1m", "input_series": [{"series": 'okna_agent_role{role="compute"}', "values": "1x20"}],
             "alert_rule_test": [{"eval_time": "16m", "alertname": "OpenkeelNodeAgentAbsent",
                                  "exp_alerts": [{"exp_labels": {"job": JOB, "severity": "warning"}}]}]},
            case([('okna_k8s_informer_failing{%s, resource="pods"}', "1x15"),
                  ('okna_k8s_informer_synced{%s, resource="pods"}', "1x15"),
                  ("okna_ovsdb_connected{%s}", "1x15"),
                  ('okna_metadata_namespaces{%s, state="wanted"}', "3x15"),
                  ('okna_metadata_namespaces{%s, state="ready"}', "2x15")],
                 "OpenkeelNodeAgentNotReady", "11m",
                 [{"check": "informer failing", "resource": "pods"}, {"check": "metadata networks not served"}]),
            case([('okna_metadata_requests_total{%s, code="200"}', "0+10x20"),
                  ('okna_metadata_requests_total{%s, code="502"}', "0+10x20")],
                 "OpenkeelMetadataServerErrors", "16m", [{}]),
            case([('okna_metadata_requests_total{%s, code="200"}', "0+100x20"),
                  ('okna_metadata_requests_total{%s, code="502"}', "0+1x20")],
                 "OpenkeelMetadataServerErrors", "16m", []),
            case([('okna_metadata_connections_refused_total{%s, reason="client"}', "0+60x30")],
                 "OpenkeelMetadataConnectionsRefused", "21m", [{"reason": "client"}]),
            case([('okna_metadata_nova_errors_total{%s, reason="status"}', "0+2x20")],
                 "OpenkeelMetadataNovaFailing", "16m", [{"reason": "status"}]),
            case([('okna_placement_pushes_total{%s, result="error"}', "0+1x30"),
                  ('okna_placement_pushes_total{%s, result="ok"}', "1x30")],
                 "OpenkeelPlacementFailing", "12m", [{"result": "error"}]),
            case([('okna_placement_pushes_total{%s, result="error"}', "0+1x30"),
                  ('okna_placement_pushes_total{%s, result="ok"}', "0+1x30")],
                 "OpenkeelPlacementFailing", "20m", []),
            case([('okna_ovsdb_reconnects_total{%s, db="OVN_Southbound"}', "0+1x40")],
                 "OpenkeelOvsdbReconnecting", "20m", [{"db": "OVN_Southbound"}]),
            case([("okna_ovsdb_ownership_lost{%s}", "1x10")], "OpenkeelOvsdbOwnershipLost", "6m", [{}]),
            case([("okna_ovsdb_vswitchd_running{%s}", "1 0x5")], "OpenkeelOvsVswitchdDown", "4m", [{}], "critical"),
            case([("okna_ovsdb_gateway_draining{%s}", "1x10")], "OpenkeelGatewayDrainStuck", "8m", [{}]),
            case([("okna_ovsdb_gateway_draining{%s}", "1x10")], "OpenkeelGatewayDrainStuck", "6m", []),
            # A drain that timed out (120 s: above the 60 s bucket), and one that took 30 s.
            case([("okna_ovsdb_gateway_drain_seconds_count{%s}", "0 0 1x10"),
                  ('okna_ovsdb_gateway_drain_seconds_bucket{%s, le="60"}', "0x12")],
                 "OpenkeelGatewayDrainTimedOut", "5m", [{}]),
            case([("okna_ovsdb_gateway_drain_seconds_count{%s}", "0 0 1x10"),
                  ('okna_ovsdb_gateway_drain_seconds_bucket{%s, le="60"}', "0 0 1x10")],
                 "OpenkeelGatewayDrainTimedOut", "5m", []),
        ]
        path = self.write("tests.yaml", {"rule_files": ["bare.yaml"], "evaluation_interval": "1m",
                                         "tests": tests})
        p = self.promtool("test", "rules", path)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)


if __name__ == "__main__":
    unittest.main()
