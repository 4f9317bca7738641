"""The Python module of the project's protocol messages (remote_pb2),
generated from src/protocol/proto/remote.proto by protoc into a temporary directory,
so that test programs decode with Google's protobuf library what promread
encodes with protobuf-c.  Needs protoc and Debian's python3-protobuf."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_module = None


def load(gen=None):
    """remote_pb2, generated once per process (into gen, a directory, when
    given; otherwise into a temporary one, removed at exit)."""
    global _module
    if _module is None:
        if gen is None:
            gen = tempfile.mkdtemp(prefix="promread-pb-")
            atexit.register(shutil.rmtree, gen, True)
        subprocess.run(["protoc", "-I", os.path.join(TOP, "src", "protocol", "proto"),
                        "--python_out", gen, "remote.proto"], check=True)
        sys.path.insert(0, gen)
        import remote_pb2
        _module = remote_pb2
    return _module
