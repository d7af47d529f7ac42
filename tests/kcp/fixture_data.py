"""Deterministic demo/benchmark objects for the fake kcp (seeded; no wall-clock data).

Workspaces: ``root`` (children ``app`` and ``team``), ``root:app`` (busy namespace ``web`` with
hundreds of configmaps, ~80 pods in mixed phases, normal and warning events, deployments; plus
``default``, ``monitoring``, ``ingress``; ``socialweb.computer/v1alpha1`` Agents and Channels),
``root:team`` (small).
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass, field
from typing import Any

BUSY_NAMESPACE = "web"
REGISTRY = "registry.socialweb.computer"
SERVICES = ("frontend", "api", "auth", "feed", "search", "media", "notify", "billing")
TEAMS = ("timeline", "identity", "discovery", "platform")
PHASE_WEIGHTS = (("Running", 62), ("Pending", 10), ("Failed", 8), ("Succeeded", 8), ("CrashLoop", 12))


@dataclass
class FixtureObjects:
    workspaces: dict[str, bool] = field(default_factory=dict)  # path -> serves socialweb.computer
    objects: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    logs: dict[tuple[str, str, str, str], str] = field(default_factory=dict)

    def add(self, workspace: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.objects.append((workspace, obj))
        return obj


def _ts(minutes: int) -> str:
    day, rem = divmod(minutes, 24 * 60)
    hour, minute = divmod(rem, 60)
    return f"2026-11-{20 + day:02d}T{hour:02d}:{minute:02d}:00Z"


def _meta(
    name: str, namespace: str | None = None, labels: dict[str, str] | None = None, minute: int = 0
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": _ts(minute)}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def _namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _meta(name, labels={"kubernetes.io/metadata.name": name}),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _workspace(name: str, phase: str = "Ready") -> dict[str, Any]:
    return {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": _meta(name, labels={"tenancy.kcp.io/phase": phase}),
        "spec": {
            "type": {"name": "universal", "path": "root"},
            "cluster": f"2x{zlib.crc32(name.encode()) % 10**8:08d}",
        },
        "status": {"phase": phase, "conditions": [{"type": "WorkspaceScheduled", "status": "True"}]},
    }


def _configmap(rng: random.Random, ns: str, service: str, index: int) -> dict[str, Any]:
    team = rng.choice(TEAMS)
    flavour = index % 4
    data: dict[str, str]
    if flavour == 0:
        data = {
            "app.properties": "\n".join(
                [
                    f"service.name={service}",
                    f"server.port={8000 + rng.randrange(100)}",
                    f"db.pool.size={rng.choice([5, 10, 20, 40])}",
                    f"cache.ttl.seconds={rng.choice([30, 60, 300, 900])}",
                    f"upstream.url=http://{rng.choice(SERVICES)}.{ns}.svc.cluster.local:8080",
                ]
            ),
            "LOG_LEVEL": rng.choice(["debug", "info", "info", "warn"]),
        }
    elif flavour == 1:
        flags = {
            f"{service}.{f}": rng.random() < 0.5
            for f in ("new_ranking", "dark_mode", "beta_api", "fast_path")
        }
        data = {
            "features.json": json.dumps(flags, sort_keys=True),
            "ROLLOUT_PERCENT": str(rng.randrange(0, 101, 5)),
        }
    elif flavour == 2:
        data = {
            "nginx.conf": (
                "worker_processes auto;\nevents { worker_connections 1024; }\nhttp {\n"
                f"  upstream {service} {{ server {service}:8080; keepalive 32; }}\n"
                f"  server {{ listen 80; location / {{ proxy_pass http://{service}; }} }}\n}}\n"
            )
        }
    else:
        data = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.monitoring:4317",
            "OTEL_SERVICE_NAME": service,
            "SAMPLING_RATIO": f"{rng.choice([0.01, 0.05, 0.1, 1.0])}",
            "REGION": rng.choice(["eu-west-1", "us-east-1", "ap-south-1"]),
        }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(
            f"{service}-config-{index:03d}",
            ns,
            {"app": service, "team": team, "tier": "backend" if service != "frontend" else "web"},
            minute=index,
        ),
        "data": data,
    }


def _pod(rng: random.Random, ns: str, service: str, index: int) -> tuple[dict[str, Any], str]:
    roll = rng.randrange(100)
    phase = "Running"
    for candidate, weight in PHASE_WEIGHTS:
        if roll < weight:
            phase = candidate
            break
        roll -= weight
    suffix = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    name = f"{service}-7d9f{index % 10}c8b-{suffix}"
    restarts = rng.randrange(3) if phase == "Running" else 0
    state: dict[str, Any] = {"running": {"startedAt": _ts(30 + index)}}
    ready = True
    if phase == "CrashLoop":
        restarts = 5 + rng.randrange(40)
        state = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 5m0s restarting failed container={service}",
            }
        }
        ready = False
    elif phase == "Pending":
        state = {"waiting": {"reason": rng.choice(["ContainerCreating", "ImagePullBackOff"])}}
        ready = False
    elif phase == "Failed":
        state = {"terminated": {"reason": "Error", "exitCode": 1, "finishedAt": _ts(90 + index)}}
        ready = False
    elif phase == "Succeeded":
        state = {"terminated": {"reason": "Completed", "exitCode": 0, "finishedAt": _ts(90 + index)}}
        ready = False
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            name, ns, {"app": service, "pod-template-hash": f"7d9f{index % 10}c8b"}, minute=20 + index
        ),
        "spec": {
            "nodeName": f"node-{rng.randrange(1, 7)}",
            "containers": [
                {
                    "name": service,
                    "image": f"{REGISTRY}/{service}:1.{rng.randrange(4, 9)}.{rng.randrange(20)}",
                    "ports": [{"containerPort": 8080}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                },
                {"name": "envoy", "image": "envoyproxy/envoy:v1.31.0"},
            ],
        },
        "status": {
            "phase": "Running" if phase == "CrashLoop" else phase,
            "podIP": f"10.42.{rng.randrange(256)}.{rng.randrange(256)}",
            "containerStatuses": [
                {"name": service, "ready": ready, "restartCount": restarts, "state": state},
                {"name": "envoy", "ready": phase == "Running", "restartCount": 0, "state": {"running": {}}},
            ],
        },
    }
    lines = [
        f"2026-11-20T09:{i % 60:02d}:00Z INFO {service} request handled path=/v1/{i} status=200"
        for i in range(40)
    ]
    if phase in ("CrashLoop", "Failed"):
        lines += [
            f"2026-11-20T10:00:00Z ERROR {service} cannot connect to database: connection refused",
            f"2026-11-20T10:00:01Z FATAL {service} exiting with status 1",
        ]
    return pod, "\n".join(lines) + "\n"


def _event(ns: str, index: int, pod: dict[str, Any], warning: bool) -> dict[str, Any]:
    name = pod["metadata"]["name"]
    if warning:
        reason, message = {
            0: ("BackOff", "Back-off restarting failed container"),
            1: ("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503"),
            2: ("FailedScheduling", "0/6 nodes are available: 6 Insufficient memory."),
            3: (
                "FailedMount",
                'MountVolume.SetUp failed for volume "config" : configmap "missing" not found',
            ),
        }[index % 4]
    else:
        reason, message = {
            0: ("Scheduled", f"Successfully assigned {ns}/{name} to node-3"),
            1: ("Pulled", "Container image already present on machine"),
            2: ("Created", "Created container"),
            3: ("Started", "Started container"),
        }[index % 4]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": _meta(f"{name}.{index:04x}", ns, minute=60 + index),
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": name, "apiVersion": "v1"},
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "count": 1 + index % 7,
        "firstTimestamp": _ts(60 + index),
        "lastTimestamp": _ts(61 + index),
        "source": {"component": "kubelet", "host": pod["spec"]["nodeName"]},
    }


def _deployment(ns: str, service: str, replicas: int, available: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**_meta(service, ns, {"app": service}), "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": service}},
            "template": {
                "metadata": {"labels": {"app": service}},
                "spec": {
                    "containers": [{"name": service, "image": f"registry.socialweb.computer/{service}:1.6.0"}]
                },
            },
        },
        "status": {"replicas": replicas, "readyReplicas": available, "availableReplicas": available},
    }


def build_fixture_objects(seed: int = 5) -> FixtureObjects:
    rng = random.Random(seed)
    fx = FixtureObjects(workspaces={"root": False, "root:app": True, "root:team": False})
    fx.add("root", _namespace("default"))
    fx.add("root", _workspace("app"))
    fx.add("root", _workspace("team"))

    app = "root:app"
    for ns in ("default", BUSY_NAMESPACE, "monitoring", "ingress"):
        fx.add(app, _namespace(ns))
    for i in range(360):
        fx.add(app, _configmap(rng, BUSY_NAMESPACE, SERVICES[i % len(SERVICES)], i))
    pods = []
    for i in range(84):
        pod, log = _pod(rng, BUSY_NAMESPACE, SERVICES[i % len(SERVICES)], i)
        pods.append(fx.add(app, pod))
        service = pod["spec"]["containers"][0]["name"]
        fx.logs[(app, BUSY_NAMESPACE, pod["metadata"]["name"], service)] = log
        fx.logs[(app, BUSY_NAMESPACE, pod["metadata"]["name"], "envoy")] = "[info] envoy ready\n"
    for i in range(150):
        pod = pods[rng.randrange(len(pods))]
        fx.add(app, _event(BUSY_NAMESPACE, i, pod, warning=i % 3 == 0))
    for service in SERVICES[:5]:
        replicas = rng.randrange(2, 12)
        fx.add(app, _deployment(BUSY_NAMESPACE, service, replicas, max(0, replicas - rng.randrange(3))))
    fx.add(app, _deployment("monitoring", "prometheus", 1, 1))
    fx.add(app, _deployment("ingress", "ingress-nginx", 2, 2))
    for i, name in enumerate(("prometheus-rules", "grafana-dashboards", "alertmanager")):
        fx.add(app, _configmap(rng, "monitoring", name.split("-")[0], i))
    fx.add(app, _configmap(rng, "default", "kube-root-ca", 0))
    fx.add(app, _configmap(rng, "ingress", "ingress-nginx", 0))
    for i, (name, model) in enumerate(
        (("concierge", "qwen3-27b"), ("moderator", "llama-4-scout"), ("digest", "qwen3-27b"))
    ):
        fx.add(
            app,
            {
                "apiVersion": "socialweb.computer/v1alpha1",
                "kind": "Agent",
                "metadata": _meta(name, BUSY_NAMESPACE, {"app": "agents"}, minute=200 + i),
                "spec": {"model": model, "channels": ["general", "support"][: 1 + i % 2], "replicas": 1},
                "status": {"phase": "Ready" if i != 1 else "Degraded"},
            },
        )
    for name in ("general", "support"):
        fx.add(
            app,
            {
                "apiVersion": "socialweb.computer/v1alpha1",
                "kind": "Channel",
                "metadata": _meta(name, BUSY_NAMESPACE, {"app": "agents"}),
                "spec": {"topic": f"#{name}", "retentionDays": 30},
            },
        )

    team = "root:team"
    for ns in ("default", "team-a"):
        fx.add(team, _namespace(ns))
    for i in range(3):
        fx.add(team, _configmap(rng, "team-a", "planner", i))
    return fx
