"""The offline rule: import sets the HF offline variables; tests cannot connect out."""

import socket
import subprocess
import sys

import pytest

from helpers import NetworkBlocked


def test_import_trainlab_sets_offline_variables_before_hf_loads():
    code = (
        "import os, sys\n"
        "for k in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE'): os.environ.pop(k, None)\n"
        "import trainlab\n"
        "assert 'huggingface_hub' not in sys.modules\n"
        "import huggingface_hub.constants as c\n"
        "print(os.environ['HF_HUB_OFFLINE'], os.environ['TRANSFORMERS_OFFLINE'], c.HF_HUB_OFFLINE)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1", "True"]


def test_outbound_connections_fail_the_test(_block_network):
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
    assert _block_network == [("192.0.2.1", 80)]
    _block_network.clear()  # this attempt was the point of the test


def test_loopback_is_allowed(_block_network):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=5)
    client.close()
    server.close()
    assert _block_network == []
