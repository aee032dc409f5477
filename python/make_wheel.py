"""Writes the actorflow wheel (tools/bazel build //python:wheel): the
package's Python files and its extension module, with the metadata pip
needs to install it offline."""

import argparse
import base64
import hashlib
import os
import sys
import zipfile

VERSION = "0.1.0"
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return f"{path},sha256={digest.rstrip(b'=').decode()},{len(data)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="the .whl to write")
    parser.add_argument("--package-dir", required=True,
                        help="the actorflow/ directory of Python files")
    parser.add_argument("--extension", required=True,
                        help="the built _actorflow.so")
    args = parser.parse_args()

    files = {}
    for root, _, names in os.walk(args.package_dir):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, os.path.dirname(args.package_dir))
                with open(path, "rb") as f:
                    files[rel] = f.read()
    with open(args.extension, "rb") as f:
        files["actorflow/_actorflow.so"] = f.read()

    info = f"actorflow-{VERSION}.dist-info"
    files[f"{info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        "Name: actorflow\n"
        f"Version: {VERSION}\n"
        "Summary: actor-model dataflow runtime: plans, sessions, pipelines\n"
        "Requires-Dist: numpy\n").encode()
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\n"
        "Generator: actorflow make_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {TAG}-{TAG}-linux_x86_64\n").encode()
    files[f"{info}/top_level.txt"] = b"actorflow\n"
    record = [record_line(p, d) for p, d in sorted(files.items())]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()

    with zipfile.ZipFile(args.out, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path in sorted(files):
            if path.endswith("RECORD"):
                continue
            info_z = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info_z.external_attr = 0o644 << 16
            wheel.writestr(info_z, files[path], zipfile.ZIP_DEFLATED)
        info_z = zipfile.ZipInfo(f"{info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        info_z.external_attr = 0o644 << 16
        wheel.writestr(info_z, files[f"{info}/RECORD"], zipfile.ZIP_DEFLATED)


if __name__ == "__main__":
    main()
