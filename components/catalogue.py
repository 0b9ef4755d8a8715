"""Catalogues of fixed facts: GPU machines, capacity modes, Managed Lustre tiers, framework images.

Pure data with no Pulumi import, so the `jobs` CLI and the policy pack can share it.
Each entry names its source; change a value here and every layer that uses it follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.contract import GIB_MOUNT_PATH


@dataclass(frozen=True)
class MachineSpec:
    """One GPU machine type and what the layers above need to know about it."""

    machine_type: str
    accelerator_type: str
    gpus_per_node: int
    # A4 and A3 Ultra boot only from Hyperdisk (cluster-toolkit gke-a4 / gke-a3-ultragpu blueprints).
    boot_disk_type: str
    boot_disk_size_gb: int
    # What a Ray worker pod may request: the node's allocatable minus system daemons, as in the
    # kubernetes-engine-samples verl / NeMo RL RayClusters (206-220 CPU, 2400-2800Gi).
    worker_cpu: int
    worker_memory_gib: int
    shm_size_gib: int
    # NCCL tuner file shipped by the gIB plugin (GoogleCloudPlatform/container-engine-accelerators).
    nccl_tuner_config: str
    # Minimum GKE version for RDMA on this machine (AI Hypercomputer custom-cluster doc).
    min_gke_version_for_rdma: str
    # Bundled 375 GB Local SSDs, all used as the node's ephemeral storage (images, emptyDirs,
    # /tmp/ray): cluster-toolkit gke-node-pool/disk_definitions.tf sets 32 for a4-highgpu-8g and
    # a3-ultragpu-8g (reference gcp-and-k8s.md 11).
    local_ssd_count: int = 0
    # What one Ray worker pod requests for /tmp/ray (logs + object spilling), in GiB. Ray caps the
    # object store at 200 GB by default (ray_constants.DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES), so
    # 1000 GiB holds about four full spills of it plus session logs; the verl sample requests the
    # same 1000Gi per worker (reference 3.6). It must fit the Local SSD capacity below.
    worker_scratch_gib: int = 1000

    @property
    def local_ssd_gib(self) -> int:
        return self.local_ssd_count * LOCAL_SSD_GB * 1000**3 // 1024**3


# Size of one Local SSD partition on these machines (Compute Engine "About Local SSD disks").
LOCAL_SSD_GB = 375

# Dynamic Workload Scheduler flex-start: a node runs at most seven days, then GKE removes it
# (GKE "About GPU obtainability with flex-start"; cluster-toolkit gke-node-pool `max_run_duration`).
FLEX_START_MAX_RUN_HOURS = 7 * 24


@dataclass(frozen=True)
class CapacityMode:
    """One way GKE provisions the GPU nodes (rl-on-gke:gpu.provisioning) and what follows from it,
    for the program (the pool's scaling, a node's lifetime) and for `rl-jobs` (a run's supervision,
    through the stack output gpuProvisioning)."""

    name: str
    # The cloud may take a node back mid-run: spot VMs are preempted at any time, flex-start VMs
    # end at their maximum run duration. An unsupervised run ends at the first such loss.
    preemptible: bool
    # Whether the GPU nodes follow demand unless gpu.scaling says otherwise: a reservation bills
    # whether or not its VMs run, so releasing them saves nothing and risks the capacity; every
    # other mode bills only for the nodes that exist.
    scales_on_demand_by_default: bool
    # Hours a node runs before GKE removes it, its default and limit; None: no such end.
    max_run_hours: int | None = None

    @property
    def supervised_by_default(self) -> bool:
        """A run on GPUs the cloud may take back is handed to a supervisor unless told not."""
        return self.preemptible

    @property
    def default_scaling(self) -> Literal["static", "on-demand"]:
        return "on-demand" if self.scales_on_demand_by_default else "static"


CAPACITY_MODES: dict[str, CapacityMode] = {
    mode.name: mode
    for mode in (
        CapacityMode("spot", preemptible=True, scales_on_demand_by_default=True),
        CapacityMode("reservation", preemptible=False, scales_on_demand_by_default=False),
        CapacityMode("on-demand", preemptible=False, scales_on_demand_by_default=True),
        CapacityMode(
            "flex-start",
            preemptible=True,
            scales_on_demand_by_default=True,
            max_run_hours=FLEX_START_MAX_RUN_HOURS,
        ),
    )
}


def _eight_gpu_rdma_machine(
    machine_type: str,
    accelerator_type: str,
    worker_memory_gib: int,
    nccl_tuner_config: str,
    min_gke_version_for_rdma: str,
) -> MachineSpec:
    """An A4 / A3 Ultra machine: both boot from Hyperdisk, leave 200 CPUs and 250 GiB of /dev/shm
    to a Ray worker and bundle 32 Local SSDs; they differ in GPU, memory, tuner and GKE floor."""
    return MachineSpec(
        machine_type=machine_type,
        accelerator_type=accelerator_type,
        gpus_per_node=8,
        boot_disk_type="hyperdisk-balanced",
        boot_disk_size_gb=200,
        worker_cpu=200,
        worker_memory_gib=worker_memory_gib,
        shm_size_gib=250,
        nccl_tuner_config=nccl_tuner_config,
        min_gke_version_for_rdma=min_gke_version_for_rdma,
        local_ssd_count=32,
    )


MACHINES: dict[str, MachineSpec] = {
    machine.machine_type: machine
    for machine in (
        _eight_gpu_rdma_machine(
            machine_type="a4-highgpu-8g",
            accelerator_type="nvidia-b200",
            worker_memory_gib=2800,
            nccl_tuner_config=f"{GIB_MOUNT_PATH}/configs/tuner_config_a4.txtpb",
            min_gke_version_for_rdma="1.32.2-gke.1475000",
        ),
        _eight_gpu_rdma_machine(
            machine_type="a3-ultragpu-8g",
            accelerator_type="nvidia-h200-141gb",
            worker_memory_gib=2400,
            nccl_tuner_config=f"{GIB_MOUNT_PATH}/configs/tuner_config_a3u.txtpb",
            min_gke_version_for_rdma="1.31.4-gke.1183000",
        ),
    )
}

# The gIB NCCL plugin image installed on RDMA GPU nodes; one pin per machine type so an
# upgrade can be rolled out to one fleet at a time (cluster-toolkit pins v1.1.0 for both).
NCCL_GIB_INSTALLER_IMAGES: dict[str, str] = {
    "a4-highgpu-8g": "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0",
    "a3-ultragpu-8g": "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0",
}


@dataclass(frozen=True)
class LustreTier:
    """Capacity rules of one Managed Lustre performance tier (MB/s per TiB)."""

    throughput: int
    min_gib: int
    max_gib: int
    step_gib: int
    # Above this capacity the step grows to `large_step_gib`; an instance cannot grow across it.
    small_step_limit_gib: int
    large_step_gib: int

    def allows(self, capacity_gib: int) -> bool:
        if not self.min_gib <= capacity_gib <= self.max_gib:
            return False
        # "The capacity must be a multiple of the step size" (increase-capacity doc); each
        # tier's maximum is itself a multiple of the large step.
        step = self.step_gib if capacity_gib <= self.small_step_limit_gib else self.large_step_gib
        return capacity_gib % step == 0

    def describe(self) -> str:
        if self.small_step_limit_gib >= self.max_gib:
            return f"{self.min_gib}..{self.max_gib} GiB in steps of {self.step_gib}"
        return (
            f"{self.min_gib}..{self.small_step_limit_gib} GiB in steps of {self.step_gib}, "
            f"then multiples of {self.large_step_gib} up to {self.max_gib}"
        )


# Managed Lustre "Performance tiers" and "Increase capacity" docs (current revision, 2026).
LUSTRE_TIERS: dict[int, LustreTier] = {
    1000: LustreTier(1000, 9_000, 10_008_000, 9_000, 1_530_000, 72_000),
    500: LustreTier(500, 18_000, 20_016_000, 18_000, 3_060_000, 144_000),
    250: LustreTier(250, 36_000, 40_032_000, 36_000, 6_120_000, 288_000),
    125: LustreTier(125, 72_000, 12_240_000, 72_000, 12_240_000, 72_000),
}

# Managed Lustre's LNet port when the instance is *not* in GKE-support mode. We keep the
# instance on 988 and the cluster's Lustre CSI driver off the legacy port (6988): the two must
# agree or mounts fail with "Is the MGS running?" (lustre-csi-driver#104; GKE API
# LustreCsiDriverConfig.enable_legacy_lustre_port).
LUSTRE_LNET_PORT = 988
# Nodes mount on port 988 without the legacy-port setting from this GKE version on.
MIN_GKE_VERSION_FOR_LUSTRE_PORT_988 = "1.33.2-gke.4655000"


@dataclass(frozen=True)
class ImagePin:
    """One container image the stack runs, as its upstream publishes it: tag and digest side by
    side. Pods never pull the tag: they pull `digest` through the stack's own Artifact Registry
    remote repository (components/registry.py), so a moved tag cannot change what runs."""

    # Its key under `rl-on-gke:images` (where a stack gives or overrides the digest).
    name: str
    registry: str  # upstream host, e.g. nvcr.io
    path: str  # repository path on that host
    tag: str
    # `sha256:<64 hex>` read from a source named in `source`; None when no source we could reach
    # ties a digest to the tag: the stack must then set `images.<name>.digest` itself (the
    # preview refuses it otherwise, and `make plan` lists it as a setting to confirm).
    digest: str | None
    source: str

    @property
    def upstream_ref(self) -> str:
        return f"{self.registry}/{self.path}:{self.tag}"


# Registry manifests (nvcr.io, Docker Hub, registry.k8s.io, gke.gcr.io) cannot be read from where
# this catalogue was written, and no citable source ties a digest to these tags: every digest below
# is UNVERIFIED and left None rather than guessed. Read each with
# `crane digest <upstream_ref>` (or `docker buildx imagetools inspect`) and set it per stack:
# `pulumi config set --path 'images.<name>.digest' sha256:...` (docs/deploy.md "Image digests").
_UNVERIFIED = "UNVERIFIED: registry manifest not readable offline; set images.{}.digest"
NEMO_RL_IMAGE = ImagePin(
    "nemo-rl", "nvcr.io", "nvidia/nemo-rl", "v0.4.0", None, _UNVERIFIED.format("nemo-rl")
)
VERL_IMAGE = ImagePin(
    "verl", "docker.io", "verlai/verl", "vllm011.latest", None, _UNVERIFIED.format("verl")
)
# Grafana OSS, the query frontend at the version Google's own example runs (prometheus-engine
# examples/frontend.yaml), and the Kubernetes project's kubectl (kubernetes#116672) for the CRD gate.
GRAFANA_IMAGE = ImagePin(
    "grafana", "docker.io", "grafana/grafana", "11.1.3", None, _UNVERIFIED.format("grafana")
)
QUERY_FRONTEND_IMAGE = ImagePin(
    "query-frontend",
    "gke.gcr.io",
    "prometheus-engine/frontend",
    "v0.15.3-gke.0",
    None,
    _UNVERIFIED.format("query-frontend"),
)
KUBECTL_IMAGE = ImagePin(
    "kubectl", "registry.k8s.io", "kubectl", "v1.35.0", None, _UNVERIFIED.format("kubectl")
)
IMAGES: dict[str, ImagePin] = {
    pin.name: pin
    for pin in (NEMO_RL_IMAGE, VERL_IMAGE, GRAFANA_IMAGE, QUERY_FRONTEND_IMAGE, KUBECTL_IMAGE)
}


@dataclass(frozen=True)
class FrameworkSpec:
    """A Ray image for one RL framework, with the Ray version it ships."""

    name: str
    version: str
    image: str
    ray_version: str
    source: str
    # `sha256:...` when the tag's digest was established from a citable source; None keeps the
    # (mutable) tag and `image_unverified` says so wherever the image is shown.
    image_digest: str | None = None
    # When only a lower bound of the image's Ray is known: any cluster Ray at or above it
    # (major.minor) is this framework's. `ray_version` is then that bound.
    ray_floor: str | None = None
    # Python packages the image lacks, installed into every Ray pod before Ray starts, as pip
    # hash-checked requirement lines (`name==version --hash=sha256:...`): pinned by content.
    install: tuple[str, ...] = ()

    @property
    def image_ref(self) -> str:
        """What pods pull: `image@digest` when the digest is known, else the tag."""
        return f"{self.image}@{self.image_digest}" if self.image_digest else self.image

    @property
    def image_unverified(self) -> bool:
        return self.image_digest is None


FRAMEWORKS: dict[str, FrameworkSpec] = {
    "nemo-rl": FrameworkSpec(
        name="nemo-rl",
        version="0.4.0",
        image=NEMO_RL_IMAGE.upstream_ref,
        ray_version="2.46.0",
        source="NVIDIA-NeMo/RL v0.4.0 uv.lock pins ray 2.46.0; image is the first NGC release",
    ),
    "verl": FrameworkSpec(
        name="verl",
        version="0.6.0",
        # UNVERIFIED PIN: no source we can cite ties a digest to this tag (the search corpus has
        # verlai/verl digests only from third-party repos, none naming vllm011.latest); the
        # stack gives it (images.verl.digest, VERL_IMAGE above).
        image=VERL_IMAGE.upstream_ref,
        image_digest=VERL_IMAGE.digest,
        # How the Ray was established: verl docker/Dockerfile.stable.vllm (the vllm011 image's
        # Dockerfile; first in the tree at tag v0.6.1, it installs verl@v0.6.0) is
        # `FROM vllm/vllm-openai:v0.11.0` and installs no Ray itself; verl's own
        # `ray[default]>=2.41.0` (setup.py) is already met, so the Ray is the base image's. vLLM v0.11.0 requirements/cuda.txt asks `ray[cgraph]>=2.48.0` and its image
        # resolves it unpinned at build time: the floor 2.48 is certain, the patch is not.
        ray_version="2.48.0",
        ray_floor="2.48.0",
        source=(
            "verl docker/Dockerfile.stable.vllm: FROM vllm/vllm-openai:v0.11.0, which needs "
            "ray[cgraph]>=2.48.0 (requirements/cuda.txt) and pins no exact Ray; the image "
            "uninstalls veRL itself, so pods install verl==0.6.0 (--no-deps) at start"
        ),
        # `RUN pip install git+...verl.git@v0.6.0` then `RUN pip uninstall -y verl` in
        # Dockerfile.stable.vllm: the image carries veRL's dependencies but not veRL. The hash
        # is that of verl-0.6.0-py3-none-any.whl as PyPI serves it (`pip download verl==0.6.0
        # --no-deps` + `pip hash`, 2026-12-01).
        install=(
            "verl==0.6.0 --hash=sha256:"
            "2666528b8ab4494e2ac40c282a99281296c2d9dc9675ceac6bea8d41fb69b321",
        ),
    ),
}

# The Ray dashboard / Jobs API port and the per-node metrics port KubeRay names `metrics`
# (kuberay ray-operator/controllers/ray/utils/constant.go).
RAY_DASHBOARD_PORT = 8265
# Ray's Metrics tab (components/k8s/grafana.py): Grafana's and the Prometheus query frontend's ports.
GRAFANA_PORT = 3000
PROMETHEUS_FRONTEND_PORT = 9090
RAY_METRICS_PORT = 8080

# The base of the code-contests executor image (images/code-sandbox/Dockerfile). How it was
# established, from docker-library sources (python @ 4f07059, buildpack-deps @ 8330ca1):
# python 3.11/bookworm/Dockerfile is `FROM buildpack-deps:bookworm` and builds CPython 3.11.x into
# /usr/local; buildpack-deps debian/bookworm/Dockerfile installs g++ and gcc; util-linux (unshare,
# setpriv, prlimit) is an Essential package of every Debian image. It lacks pydantic, which the
# executor imports (jobs/rewards/service.py, sandbox.py), and the pods cannot install anything
# (egress denied), so the Dockerfile adds it. Tag only: no source we can cite ties a digest to
# it; the image a stack runs is the user's build, best given by digest (rewards.codeSandbox.image).
CODE_SANDBOX_BASE_IMAGE = "python:3.11-bookworm"
