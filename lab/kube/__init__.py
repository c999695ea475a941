"""An emulated Kubernetes API server with controllers, a scheduler and a kubelet model, served
over HTTP so that the official client and kubectl work against it unchanged.

Why: Stratus is tried, tested and benchmarked without a real cluster, and no installable
package behaves like an API server (see `docs`/NOTES). The emulator keeps the real server's
semantics where Stratus and its users meet them: Status errors, resourceVersion and
generation, managedFields, selectors, watches, the three patch types, server-side dry run,
cascading deletion, quota admission, and the controllers whose writes `kubectl rollout`,
`kubectl describe` and the diagnosis read.

Public API::

    from lab.clock import LabClock
    from lab.kube import LabCluster

    cluster = LabCluster(clock=LabClock(speed=1.0), runtime=None, seed=0, name="lab", nodes=3)
    cluster.api                      # KubeApi: implements lab.kube.runtime.ClusterAPI in-process
    url = cluster.serve()            # HTTP on 127.0.0.1:<free port>, returns "http://127.0.0.1:N"
    cluster.write_kubeconfig(path)   # for the official client and kubectl
    cluster.start(); cluster.stop()  # background driver (running clock); also a context manager
    cluster.reconcile()              # run every controller until quiescent at the current lab time
    cluster.apply_manifests(yaml_text_or_dicts, field_manager="lab")  # create-or-replace
    cluster.logs                     # LogStore: container logs (current and previous)
    cluster.resource_version()       # the store's global resourceVersion

With a stepped clock (`LabClock(stepped=True)`), `clock.advance(s)` runs the controllers in the
caller's thread, deterministically for a given seed. Errors are `lab.kube.errors.ApiError`
subclasses carrying the HTTP status, reason and message. See README.md for details and limits.
"""

from lab.kube.api import KubeApi
from lab.kube.bootstrap import NodeSpec
from lab.kube.cluster import LabCluster
from lab.kube.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
)
from lab.kube.logs import LogStore
from lab.kube.static_runtime import DEFAULT_IMAGES, ImageSpec, StaticRuntime

__all__ = [
    "DEFAULT_IMAGES",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "ImageSpec",
    "Invalid",
    "KubeApi",
    "LabCluster",
    "LogStore",
    "NodeSpec",
    "NotFound",
    "StaticRuntime",
]
