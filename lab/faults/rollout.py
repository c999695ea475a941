"""Faults that roll out a broken pod template: an image the registry lacks, a bad build that
panics, a command naming a binary the image does not have.

The injector only changes the Deployment (as `kubectl set image` or an edit would); whether the
pull fails, the process panics or runc cannot exec follows from the simulated registry's
contents and the image's files (`lab.sim.images`). So a fault is only accepted when it really
is one: the tag must be missing, the build must panic, the binary must be absent.
"""

from __future__ import annotations

import shlex

from agents.model import Category, FaultLevel, FaultType
from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import container_patch, deployment_of, main_container
from lab.faults.model import Param
from lab.sim.images import parse_image, resolve_exec

PULL = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.OPERATION_ERROR)
CODE = Category(level=FaultLevel.APPLICATION, type=FaultType.CODE_DEFECT)
APP_MISCONFIG = Category(level=FaultLevel.APPLICATION, type=FaultType.MISCONFIGURATION)


def _next_tag(tag: str, exists: set[str]) -> str:
    """The next release after `tag` that nobody pushed yet: bump the last number."""
    head, _, last = tag.rpartition(".")
    if last.isdigit():
        for bump in range(1, 100):
            candidate = f"{head}.{int(last) + bump}" if head else str(int(last) + bump)
            if candidate not in exists:
                return candidate
    return f"{tag}-next"


def _set_image(ctx: FaultContext, image: str) -> None:
    dep = deployment_of(ctx)
    container = main_container(dep)
    name = dep["metadata"]["name"]
    ctx.patch(
        "Deployment",
        name,
        container_patch(container["name"], image=image),
        patch_type="strategic",
        change=f"Deployment/{name}: container {container['name']} image "
        f"{container.get('image')} → {image}",
    )


def _tags(ctx: FaultContext, repository: str) -> set[str]:
    return {
        tag
        for image in ctx.bundle.model.images
        if image.repository == repository
        for tag in image.tags
    }


class ImageNotFound(Fault):
    id = "image-not-found"
    description = "roll out an image tag the registry does not have (ImagePullBackOff)"
    category = PULL
    params = (
        Param(
            name="tag",
            kind=str,
            help="the tag to roll out",
            default="the next version after the current one, never pushed",
        ),
    )
    default_targets = targets({"hotel-reservation": "user", "online-shop": "ad"})

    def apply(self, ctx: FaultContext) -> None:
        current = str(main_container(deployment_of(ctx)).get("image", ""))
        ref = parse_image(current)
        if "tag" not in ctx.params:
            ctx.params["tag"] = _next_tag(ref.tag, _tags(ctx, ref.repository))
        image = f"{ref.repository}:{ctx.params['tag']}"
        if ctx.world.registry.get(image) is not None:
            raise BadParameter(f"{self.id}: the registry has {image}; choose a missing tag")
        _set_image(ctx, image)


class CrashingImage(Fault):
    id = "crashing-image"
    description = "roll out a bad build that panics at start (CrashLoopBackOff)"
    category = CODE
    params = (
        Param(
            name="tag",
            kind=str,
            help="the tag of the bad build",
            default="the registry's bad build of the target's image",
        ),
    )
    default_targets = targets(
        {"hotel-reservation": "recommendation", "online-shop": "product-catalog"}
    )

    def apply(self, ctx: FaultContext) -> None:
        current = str(main_container(deployment_of(ctx)).get("image", ""))
        repository = parse_image(current).repository
        if "tag" not in ctx.params:
            bad = sorted(
                tag
                for image in ctx.bundle.model.images
                if image.repository == repository
                for tag, spec in image.tags.items()
                if spec.panic
            )
            if not bad:
                raise BadParameter(
                    f"{self.id}: the registry has no bad build of {repository}; "
                    "pass --param tag=... or choose another target"
                )
            ctx.params["tag"] = bad[0]
        image = f"{repository}:{ctx.params['tag']}"
        spec = ctx.world.registry.get(image)
        if spec is None or spec.panic is None:
            raise BadParameter(f"{self.id}: {image} is not a build that crashes")
        _set_image(ctx, image)


class WrongBinary(Fault):
    id = "wrong-binary"
    description = "set a container command to a binary its image does not have"
    category = APP_MISCONFIG
    params = (
        Param(
            name="command",
            kind=str,
            help="the new command (split like a shell would)",
            default="the current binary's name with 'service' appended",
        ),
    )
    default_targets = targets({"hotel-reservation": "profile", "online-shop": "currency"})

    def apply(self, ctx: FaultContext) -> None:
        dep = deployment_of(ctx)
        container = main_container(dep)
        image = ctx.world.registry.get(str(container.get("image", "")))
        if image is None:
            raise BadParameter(f"{self.id}: the target's image is not in the registry")
        current = list(container.get("command") or image.entrypoint)
        if "command" not in ctx.params:
            if not current:
                raise BadParameter(f"{self.id}: the target has no command; pass --param command=")
            ctx.params["command"] = f"{current[0]}service"
        command = shlex.split(str(ctx.params["command"]))
        if not command:
            raise BadParameter("parameter command: empty")
        # Only a binary the image lacks (or one that serves something else) is this fault.
        ran = resolve_exec(image, command, container.get("args"))
        own = ctx.bundle.model.services[ctx.target].binary
        if ran.binary == own:
            raise BadParameter(f"{self.id}: {command[0]!r} is the target's own binary")
        name = dep["metadata"]["name"]
        ctx.patch(
            "Deployment",
            name,
            container_patch(container["name"], command=command),
            patch_type="strategic",
            change=f"Deployment/{name}: container {container['name']} command "
            f"{current} → {command}",
        )
