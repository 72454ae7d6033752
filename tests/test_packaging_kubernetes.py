"""packaging/kubernetes/: the Pod, agent-sandbox SandboxTemplate,
SandboxWarmPool and SandboxClaim inject agentd as agentd-inject does on
Docker (tests/test_packaging_inject.py proves that mechanism on a real
engine). No cluster runs here, so every field the recipe relies on is
read back and checked: the copy into the emptyDir, the command wrapping,
the mounts, the token Secret's mode, the probes and their port, the
requests, and the references between the objects."""

import os
import re
import subprocess
import unittest

from lib import mini_yaml
from lib.agentd_test import AGENTD_BIN

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KUBE = os.path.join(ROOT, "packaging", "kubernetes")

# Field names of extensions.agents.x-k8s.io/v1beta1, as read from
# kubernetes-sigs/agent-sandbox extensions/api/v1beta1/*_types.go and
# api/v1beta1/sandbox_types.go (SandboxBlueprint).
TEMPLATE_SPEC_FIELDS = {"podTemplate", "volumeClaimTemplates", "service", "networkPolicy",
                        "networkPolicyManagement", "envVarsInjectionPolicy",
                        "volumeClaimTemplatesPolicy"}
WARMPOOL_SPEC_FIELDS = {"replicas", "sandboxTemplateRef", "updateStrategy"}
CLAIM_SPEC_FIELDS = {"warmPoolRef", "lifecycle", "additionalPodMetadata", "env",
                     "volumeClaimTemplates"}


def load(name):
    with open(os.path.join(KUBE, name)) as f:
        return mini_yaml.load(f.read())


def by_name(items, name):
    found = [i for i in items if i["name"] == name]
    if len(found) != 1:
        raise AssertionError("%d entries named %s in %r" % (len(found), name, items))
    return found[0]


def flag(command, name):
    """The value of --NAME=VALUE in agentd's flags (before --)."""
    flags = command[1:command.index("--")]
    values = [f.split("=", 1)[1] for f in flags if f.startswith("--" + name + "=")]
    return values[0] if len(values) == 1 else None


class PodSpecChecks:
    """Assertions on one pod spec (the Pod's, the template's)."""

    def check_pod_spec(self, spec):
        self.assertIs(spec["automountServiceAccountToken"], False)
        volumes = spec["volumes"]
        init, = spec["initContainers"]
        guest, = spec["containers"]

        # The binary: copied by the init container into an emptyDir that the
        # guest mounts read-only, where its command starts agentd.
        bin_mount = by_name(init["volumeMounts"], "agentd-bin")["mountPath"]
        self.assertIn("emptyDir", by_name(volumes, "agentd-bin"))
        self.assertEqual(init["command"][0], "/bin/cp")
        self.assertEqual(init["command"][-1], bin_mount + "/agentd")
        guest_bin = by_name(guest["volumeMounts"], "agentd-bin")
        self.assertIs(guest_bin["readOnly"], True)
        command = guest["command"]
        self.assertEqual(command[0], guest_bin["mountPath"] + "/agentd")
        with open(os.path.join(KUBE, "Dockerfile.carrier")) as f:
            carrier = f.read()
        self.assertIn("COPY agentd %s\n" % init["command"][1], carrier)

        # The wrapping: agentd --init ... -- then the image's own command.
        self.assertEqual(command[1], "--init")
        self.assertEqual(command[-1], "--")
        self.assertTrue(guest["args"], "the image's ENTRYPOINT and CMD go in args")
        help_text = subprocess.run([AGENTD_BIN, "--help"], capture_output=True,
                                   text=True).stdout
        for f in command[1:-1]:
            self.assertIn(f.split("=")[0] + " ", help_text, "agentd has no flag " + f)
        self.assertEqual(guest["securityContext"]["runAsUser"], 0)
        self.assertIsNotNone(flag(command, "init-user"))

        # The token: a Secret file, root-only, named by --token-file.
        token_path = flag(command, "token-file")
        token_dir, token_name = os.path.split(token_path)
        self.assertIs(by_name(guest["volumeMounts"], "agentd-token")["readOnly"], True)
        self.assertEqual(by_name(guest["volumeMounts"], "agentd-token")["mountPath"], token_dir)
        secret = by_name(volumes, "agentd-token")["secret"]
        self.assertEqual(secret["secretName"], "agentd-token")
        self.assertIsInstance(secret["defaultMode"], int)
        self.assertEqual(secret["defaultMode"] & 0o077, 0, "group or others could read it")
        self.assertEqual([i["path"] for i in secret["items"] if i["key"] == "token"],
                         [token_name])
        self.assertFalse([e for e in guest.get("env", []) if "TOKEN" in e["name"].upper()])

        # The probes: /v1/health on the port agentd listens on.
        port = by_name(guest["ports"], "agentd")["containerPort"]
        self.assertEqual(re.fullmatch(r"0\.0\.0\.0:(\d+)", flag(command, "listen")).group(1),
                         str(port))
        for probe in ("readinessProbe", "livenessProbe"):
            get = guest[probe]["httpGet"]
            self.assertEqual(get["path"], "/v1/health")
            self.assertIn(get["port"], ("agentd", port))
        # Liveness tolerates more than readiness: a busy guest leaves the
        # pool before it is restarted.
        live, ready = guest["livenessProbe"], guest["readinessProbe"]
        self.assertGreater(live["periodSeconds"] * live["failureThreshold"],
                           ready["periodSeconds"] * ready["failureThreshold"])

        # Requests: the scheduler places guests by them.
        for container in (init, guest):
            requests = container["resources"]["requests"]
            self.assertTrue(requests.get("cpu") and requests.get("memory"), container["name"])
        self.assertIn("memory", guest["resources"]["limits"])


class PodTest(unittest.TestCase, PodSpecChecks):
    def test_the_pod_injects_agentd_from_an_empty_dir_with_a_secret_token_and_probes(self):
        pod = load("pod.yaml")
        self.assertEqual((pod["apiVersion"], pod["kind"]), ("v1", "Pod"))
        self.check_pod_spec(pod["spec"])


class AgentSandboxTest(unittest.TestCase, PodSpecChecks):
    def test_the_sandbox_template_carries_the_same_pod(self):
        template = load("sandbox-template.yaml")
        self.assertEqual((template["apiVersion"], template["kind"]),
                         ("extensions.agents.x-k8s.io/v1beta1", "SandboxTemplate"))
        self.assertLessEqual(set(template["spec"]), TEMPLATE_SPEC_FIELDS)
        self.assertEqual(set(template["spec"]["podTemplate"]), {"metadata", "spec"})
        self.check_pod_spec(template["spec"]["podTemplate"]["spec"])
        self.assertEqual(template["spec"]["podTemplate"]["spec"], load("pod.yaml")["spec"])
        self.assertIs(template["spec"]["service"], True)  # what the router proxies to

    def test_the_warm_pool_and_a_claim_reference_the_template(self):
        template, pool, claim = (load("sandbox-template.yaml"), load("sandbox-warmpool.yaml"),
                                 load("sandbox-claim.yaml"))
        for obj, kind, fields in ((pool, "SandboxWarmPool", WARMPOOL_SPEC_FIELDS),
                                  (claim, "SandboxClaim", CLAIM_SPEC_FIELDS)):
            self.assertEqual((obj["apiVersion"], obj["kind"]),
                             ("extensions.agents.x-k8s.io/v1beta1", kind))
            self.assertLessEqual(set(obj["spec"]), fields)
        self.assertEqual(pool["spec"]["sandboxTemplateRef"], {"name": template["metadata"]["name"]})
        self.assertIsInstance(pool["spec"]["replicas"], int)
        self.assertGreater(pool["spec"]["replicas"], 0)
        self.assertIn(pool["spec"]["updateStrategy"]["type"], ("Recreate", "OnReplenish"))
        self.assertEqual(claim["spec"]["warmPoolRef"], {"name": pool["metadata"]["name"]})


if __name__ == "__main__":
    unittest.main()
