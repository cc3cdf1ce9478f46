"""Reads TensorBoard event files as TensorBoard's server does and prints one JSON object.

Usage: tb_read.py PATH   (an event file, or a folder of them as `tensorboard --logdir` reads)

Prints {"scalars": {tag: [[wall_time, step, value], ...]},
        "texts": {tag: [[wall_time, step, text], ...]},
        "records": N, "file_versions": [...]}
in the order the reader returns them, through the accumulator TensorBoard's server loads runs
with (plugin_event_accumulator: scalars migrated to tensors, a SessionLog START dropping what
came before at its step and after). Every point is kept (size guidance 0). A non-finite value
prints as null. "records" counts the records of every file under PATH through
TensorBoard's record reader, which checks both CRC-32Cs of each and raises on a mismatch.
The test-only environment comes from tests/tools/setup-tensorboard-env.sh.
"""

import glob
import json
import math
import os
import sys

from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
from tensorboard.util import tensor_util


def checked_records(path):
    """Every record of every event file under path, each CRC checked (DataLossError otherwise)."""
    files = [path] if os.path.isfile(path) else sorted(glob.glob(os.path.join(path, "*tfevents*")))
    count, versions = 0, []
    for name in files:
        reader = pywrap_tensorflow.PyRecordReader_New(name.encode())
        while True:
            try:
                reader.GetNext()
            except errors.OutOfRangeError:
                break
            event = event_pb2.Event.FromString(reader.record())
            if event.HasField("file_version"):
                versions.append(event.file_version)
            count += 1
    return count, versions


def finite(value):
    return value if math.isfinite(value) else None


def main():
    path = sys.argv[1]
    records, versions = checked_records(path)
    acc = plugin_event_accumulator.EventAccumulator(
        path, size_guidance={plugin_event_accumulator.TENSORS: 0}, tensor_size_guidance={"scalars": 0, "text": 0})
    acc.Reload()
    scalars, texts = {}, {}
    for tag in acc.Tags()["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        values = [(e.wall_time, e.step, tensor_util.make_ndarray(e.tensor_proto).item()) for e in acc.Tensors(tag)]
        if plugin == "scalars":
            scalars[tag] = [[wall, step, finite(float(value))] for wall, step, value in values]
        elif plugin == "text":
            texts[tag] = [[wall, step, value.decode("utf-8")] for wall, step, value in values]
    print(json.dumps({"scalars": scalars, "texts": texts, "records": records, "file_versions": versions}))


if __name__ == "__main__":
    main()
