"""DALI's serialized checkpoints (Pipeline.checkpoint() with no directory,
Pipeline(checkpoint=...), the iterators' checkpoints() and state_dict()) as
bytes: a tar of the checkpoint directory actorflow writes (docs/
checkpoints.md), the samples a pipeline carries from one batch to the next
(an .npz, read without pickles) and, from an iterator, its place in the
epoch (JSON). Nothing else is read back from such bytes, and nothing is
written outside the directory they are unpacked into."""

import io
import json
import os
import tarfile
import tempfile

import numpy

_CHECKPOINT = "checkpoint"
_CARRY = "carry.npz"
_ITERATOR = "iterator.json"


def pack(pipe, iterator=None):
    """`pipe`'s state as bytes; `iterator`: a dict of an iterator's place
    (numbers and booleans) kept beside it."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as directory:
        path = pipe.checkpoint(directory)
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(path, arcname=_CHECKPOINT, filter=_plain)
            _add(tar, _CARRY, _carry_bytes(getattr(pipe, "_carry", None)))
            if iterator is not None:
                _add(tar, _ITERATOR, json.dumps(iterator).encode())
    return buffer.getvalue()


class Unpacked:
    """Bytes from pack(), unpacked into a directory of their own (removed
    by cleanup()): `path` is the checkpoint directory to restore from,
    `carry` the carried samples, `iterator` the iterator's place or None."""

    def __init__(self, data):
        self._directory = tempfile.TemporaryDirectory()
        try:
            self._unpack(bytes(data))
        except BaseException:
            self._directory.cleanup()
            raise

    def _unpack(self, data):
        root = self._directory.name
        try:
            tar = tarfile.open(fileobj=io.BytesIO(data), mode="r")
        except tarfile.TarError:
            raise ValueError(
                "checkpoint: these bytes are no checkpoint that "
                "Pipeline.checkpoint() returned") from None
        with tar:
            for member in tar.getmembers():
                parts = member.name.split("/")
                inside = parts[0] == _CHECKPOINT and ".." not in parts and \
                    (member.isfile() or member.isdir())
                if not inside and not (member.isfile() and member.name in
                                       (_CARRY, _ITERATOR)):
                    raise ValueError(
                        f"checkpoint: holds '{member.name}', which no "
                        "Pipeline.checkpoint() writes")
            tar.extractall(root)
        self.path = os.path.join(root, _CHECKPOINT)
        if not os.path.isdir(self.path):
            raise ValueError("checkpoint: holds no pipeline checkpoint")
        self.carry = _carry_from(os.path.join(root, _CARRY))
        iterator = os.path.join(root, _ITERATOR)
        self.iterator = None
        if os.path.exists(iterator):
            with open(iterator) as f:
                self.iterator = json.load(f)

    def cleanup(self):
        self._directory.cleanup()


def _plain(info):
    """A member without the times and owners of the files it was made
    from: the same state gives the same bytes."""
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _carry_bytes(carry):
    """The carried samples (a list per output of arrays, or None) as an
    .npz: 'outputs' counts the outputs, 'k_i' is output k's sample i."""
    arrays = {"outputs": numpy.array(-1 if carry is None else len(carry))}
    for k, samples in enumerate(carry or []):
        for i, sample in enumerate(samples):
            arrays[f"{k}_{i}"] = sample
    buffer = io.BytesIO()
    numpy.savez(buffer, **arrays)
    return buffer.getvalue()


def _carry_from(path):
    if not os.path.exists(path):
        return None
    with numpy.load(path, allow_pickle=False) as saved:
        outputs = int(saved["outputs"])
        if outputs < 0:
            return None
        carry = [[] for _ in range(outputs)]
        for name in saved.files:
            if name == "outputs":
                continue
            k, i = (int(x) for x in name.split("_"))
            carry[k].append((i, saved[name]))
    return [[sample for _, sample in sorted(samples, key=lambda s: s[0])]
            for samples in carry]
