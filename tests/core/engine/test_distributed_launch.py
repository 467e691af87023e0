"""The launch options, the torchrun command, srun's variables, the batch split and the
consumer-card preflight, without starting a group (fast; tests/core/engine/test_distributed.py starts them)."""

from __future__ import annotations

import json
from argparse import Namespace
from types import SimpleNamespace

import pytest

from fixtures.fake_nvml import FakeNvml, rtx_4090
from trainlab.api.errors import UsageError
from trainlab.cli.commands import main
from trainlab.engine.distributed import RankGroup, _state_bytes, _state_from_bytes, map_slurm
from trainlab.engine.distributed_preflight import p2p_advice
from trainlab.engine.torchrun import LaunchOptions, options_from, parse_gpus, rank_environment, strip_launch_options, torchrun_command


def _args(**given) -> Namespace:
    names = ("gpus", "nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port", "rdzv_endpoint", "rdzv_id")
    return Namespace(**{name: given.get(name) for name in names})


def test_gpus_is_a_count_all_or_numbers_in_bus_order():
    assert parse_gpus("all", 4) == [0, 1, 2, 3]
    assert parse_gpus("2", 4) == [0, 1]
    assert parse_gpus("0,2", 4) == [0, 2]
    assert parse_gpus("1,", 4) == [1]
    for bad, words in (("5", "has 4 GPU"), ("0,7", "no GPU 7"), ("1,1", "distinct"), ("x", "expected"), ("a,b", "expected")):
        with pytest.raises(UsageError, match=words):
            parse_gpus(bad, 4)
    with pytest.raises(UsageError, match="no usable CUDA GPU"):
        parse_gpus("1", 0)


@pytest.mark.parametrize(
    "given, words",
    [
        (dict(gpus="0"), "--device cuda:1"),
        (dict(nnodes=2), "--node-rank R --master-addr"),
        (dict(rdzv_endpoint="host:29400"), "needs --rdzv-id"),
        (dict(rdzv_endpoint="host", rdzv_id="x"), "HOST:PORT"),
        (dict(rdzv_endpoint="h:1", rdzv_id="x", node_rank=0), "replaces --node-rank"),
        (dict(nnodes=2, node_rank=2, master_addr="h", master_port=1), "must be 0 to 1"),
        (dict(nproc_per_node=0), "at least 1"),
        (dict(gpus="0,1", nproc_per_node=3), "one process per GPU"),
    ],
)
def test_bad_launch_options_are_refused_naming_the_option(given, words):
    device = "cuda:1" if "gpus" in given and given.get("nproc_per_node") is None else "auto"
    with pytest.raises(UsageError, match=words):
        options_from(_args(**given), device, gpu_count=2)


def test_the_cli_refuses_gpus_with_a_device_and_gpus_without_any(capsys, toy_csv):
    assert main(["train", "toy-classification", "--data", str(toy_csv), "--gpus", "0", "--device", "cuda:1", "--json"]) == 2
    assert "--gpus 0 with --device cuda:1" in json.loads(capsys.readouterr().out)["error"]
    if not __import__("torch").cuda.is_available():
        assert main(["train", "toy-classification", "--data", str(toy_csv), "--gpus", "1", "--json"]) == 2
        assert "no usable CUDA GPU" in json.loads(capsys.readouterr().out)["error"]


def test_torchrun_is_called_with_a_list_and_the_ranks_get_the_train_arguments():
    argv = ["-v", "train", "toy", "--data", "d.csv", "--gpus", "0,2", "--master-port=123", "--nnodes", "1", "--epochs", "3"]
    rank_argv = strip_launch_options(argv)
    assert rank_argv == ["-v", "train", "toy", "--data", "d.csv", "--epochs", "3"]
    opts = options_from(_args(gpus="0,2"), "auto", gpu_count=4)
    opts.master_port = 29511
    cmd = torchrun_command(opts, rank_argv, python="/py")
    assert cmd[:3] == ["/py", "-m", "torch.distributed.run"]
    assert cmd[cmd.index("--nproc-per-node") + 1] == "2" and cmd[cmd.index("--master-addr") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--master-port") + 1] == "29511"
    assert cmd[-len(rank_argv) - 2 :] == ["-m", "trainlab", *rank_argv]
    elastic = options_from(_args(rdzv_endpoint="node0:29400", rdzv_id="job7", nnodes=2), "auto", gpu_count=1)
    cmd = torchrun_command(elastic, rank_argv)
    assert cmd[cmd.index("--rdzv-backend") + 1] == "c10d" and "--master-addr" not in cmd


def test_the_ranks_see_the_chosen_gpus_in_bus_order_and_a_share_of_the_cores():
    env = rank_environment(LaunchOptions(gpus=[0, 2], nproc_per_node=2, device="cuda"), base={})
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and env["CUDA_VISIBLE_DEVICES"] == "0,2"
    assert json.loads(env["TRAINLAB_LAUNCH"])["world_size"] == 2
    env = rank_environment(LaunchOptions(gpus=[1], nproc_per_node=1, device="cuda"), base={"CUDA_VISIBLE_DEVICES": "3,5"})
    assert env["CUDA_VISIBLE_DEVICES"] == "5"  # numbers count among what was already visible
    import os

    cpu = rank_environment(LaunchOptions(nproc_per_node=2, device="cpu"), base={})
    assert cpu["OMP_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // 2))
    assert rank_environment(LaunchOptions(nproc_per_node=2, device="cpu"), base={"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"


def test_srun_variables_become_torchruns_where_those_are_absent():
    env = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "2(x2)",
           "SLURM_NODEID": "1", "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.5", "SLURM_JOB_ID": "123456"}  # fmt: skip
    mapped = map_slurm(env)
    assert mapped["RANK"] == "3" and env["WORLD_SIZE"] == "4" and env["LOCAL_RANK"] == "1" and env["LOCAL_WORLD_SIZE"] == "2"
    assert env["MASTER_ADDR"] == "10.0.0.5" and env["MASTER_PORT"] == str(15000 + 123456 % 5000)
    assert map_slurm({"RANK": "0", "WORLD_SIZE": "2", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}) == {}  # torchrun's win
    assert map_slurm({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}) == {}  # one task: not a group
    with pytest.raises(UsageError, match="MASTER_ADDR"):
        map_slurm({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"})


def _group(rank: int, world: int) -> RankGroup:
    return RankGroup(rank=rank, world_size=world, local_rank=rank, local_world_size=world, backend="gloo", device="cpu")


def test_each_global_batch_is_dealt_across_the_ranks_and_a_short_one_padded_with_nothing():
    batches = [[5, 1, 7, 3], [0, 2, 6], [4]]
    shards = [_group(r, 2).shard_batches(batches) for r in (0, 1)]
    assert shards[0][0] == [[5, 7], [0, 6], [4]] and shards[1][0] == [[1, 3], [2], [4]]
    assert shards[0][1] == [2, 2, 1] and shards[1][1] == [2, 1, 0]  # rank 1's repeat of example 4 weighs 0
    assert shards[0][2] == shards[1][2] == [4, 3, 1]
    assert [_group(r, 3).eval_batches([[1], [2], [3], [4]]) for r in range(3)] == [[[1], [4]], [[2]], [[3]]]  # whole batches, none repeated


def test_an_accumulators_state_crosses_processes_as_safetensors_and_json():
    import torch

    state = {"outputs": torch.randn(3, 2), "targets": torch.tensor([0, 1, 1]), "keys": [4, 9, 2], "loss_sum": 1.5, "samples": 3}
    back = _state_from_bytes(_state_bytes(state))
    assert torch.equal(back["outputs"], state["outputs"]) and torch.equal(back["targets"], state["targets"])
    assert back["keys"] == [4, 9, 2] and back["loss_sum"] == 1.5 and back["samples"] == 3
    assert b"\x80\x04" not in _state_bytes(state)[:16]  # not a pickle


class TwoGeForceNvml(FakeNvml):
    """Two RTX 4090s on PCIe: NVML says no peer-to-peer between them."""

    NVML_P2P_CAPS_INDEX_READ = 0
    NVML_P2P_STATUS_OK = 0
    NVML_P2P_STATUS_NOT_SUPPORTED = 5

    def __init__(self, p2p_status: int = 5, **kwargs):
        super().__init__([rtx_4090(), rtx_4090(uuid="GPU-4090ffff-0000-1111-2222-333344445555")], **kwargs)
        self.p2p_status = p2p_status

    def nvmlDeviceGetP2PStatus(self, a, b, index):
        self._count("nvmlDeviceGetP2PStatus")
        return self.p2p_status


def test_two_geforce_cards_without_p2p_get_nccl_p2p_disabled_unless_the_user_chose():
    from trainlab.engine.distributed_preflight import apply_p2p_preflight

    env: dict[str, str] = {"CUDA_VISIBLE_DEVICES": "0,1"}
    advice = apply_p2p_preflight(env, nvml=TwoGeForceNvml())
    assert advice.disable and env["NCCL_P2P_DISABLE"] == "1" and "GeForce RTX 4090" in advice.reason
    assert advice.pairs_without_p2p == ((0, 1),)
    user = {"NCCL_P2P_DISABLE": "0"}
    assert not apply_p2p_preflight(user, nvml=TwoGeForceNvml()).disable and user["NCCL_P2P_DISABLE"] == "0"
    with_p2p = TwoGeForceNvml(p2p_status=0)
    assert not p2p_advice(with_p2p, None, {}).disable
    assert with_p2p.initialised == 0  # NVML shut down again
    assert not p2p_advice(FakeNvml([rtx_4090()]), None, {}).disable  # one card: nothing to route
    assert not p2p_advice(SimpleNamespace(nvmlInit=lambda: (_ for _ in ()).throw(OSError("no driver"))), None, {}).disable


def test_the_all_reduce_check_passes_at_world_size_one_on_gloo(monkeypatch):
    """A real group of one (gloo, loopback): the preflight sum and the bytes gathered across it."""
    import torch.distributed as dist

    from trainlab.engine import distributed
    from trainlab.engine.torchrun import free_port

    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}.items():
        monkeypatch.setenv(key, value)
    group = distributed.start("cpu")
    try:
        assert distributed.current() is group and group.writer and dist.get_backend() == "gloo"
        assert group.gather_json({"a": [1, 2]}) == [{"a": [1, 2]}]
        states = group.rank_rng_states()
        import torch

        before = torch.rand(3)
        assert group.restore_rank_rng(states) and torch.equal(torch.rand(3), before)
    finally:
        distributed.finish()
    assert distributed.current() is None and not dist.is_initialized()
