"""Reads TensorBoard event files with the `tensorboard` package's own reader, for the C++ tests.

usage: tb_reader.py EVENT_FILE
Prints one JSON object: the records as TensorBoard's record reader (the TensorFlow stub it uses
when TensorFlow is absent, which checks both masked CRC-32Cs of every record with its own CRC
code) and tensorboard's Event protobuf see them, and the scalars as event_accumulator (what the
scalar dashboard shows) sees them. A record that fails a CRC check prints {"data_loss": message}
and exits 3.
"""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow


def raw_events(path):
    reader = pywrap_tensorflow.PyRecordReader_New(path.encode(), 0, b"", None)
    out = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return out
        out.append(event_pb2.Event.FromString(reader.record()))


def main():
    path = sys.argv[1]
    try:
        events = raw_events(path)
    except errors.DataLossError as e:
        print(json.dumps({"data_loss": str(e)}))
        return 3
    records = []
    for ev in events:
        r = {"wall_time": ev.wall_time, "step": ev.step, "what": ev.WhichOneof("what")}
        if r["what"] == "file_version":
            r["file_version"] = ev.file_version
        elif r["what"] == "summary":
            r["values"] = [
                {"tag": v.tag, "kind": v.WhichOneof("value"), "simple_value": v.simple_value}
                for v in ev.summary.value
            ]
        records.append(r)
    acc = event_accumulator.EventAccumulator(path)
    acc.Reload()
    scalars = {
        tag: [{"step": s.step, "wall_time": s.wall_time, "value": s.value} for s in acc.Scalars(tag)]
        for tag in acc.Tags()["scalars"]
    }
    # Text summaries as the text dashboard finds them: tensors whose metadata names the text
    # plugin, each a scalar string tensor.
    texts = {}
    for tag in acc.Tags().get("tensors", []):
        if acc.SummaryMetadata(tag).plugin_data.plugin_name != "text":
            continue
        texts[tag] = [{"step": t.step, "shape": list(t.tensor_proto.tensor_shape.dim),
                       "text": [v.decode("utf-8") for v in t.tensor_proto.string_val]}
                      for t in acc.Tensors(tag)]
    print(json.dumps({"records": records, "scalars": scalars, "texts": texts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
