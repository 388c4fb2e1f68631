"""A strict reader of the Prometheus text exposition format (0.0.4), enough to reject what
node_exporter's textfile collector would: names, label syntax and escapes, values, HELP/TYPE
placement, families split apart, duplicate series."""
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
VALUE = re.compile(r"^(?:[+-]?Inf|NaN|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class PromError(ValueError):
    pass


def _labels(text, lineno):
    """text after '{' up to and including '}': returns (labels, rest)."""
    try:
        return _labels_unchecked(text, lineno)
    except IndexError:
        raise PromError("line %d: unterminated label set" % lineno)


def _labels_unchecked(text, lineno):
    labels, i = [], 0
    while True:
        if text[i] == "}":
            return labels, text[i + 1:]
        m = LABEL.match(text, i)
        if not m:
            raise PromError("line %d: bad label name at %r" % (lineno, text[i:]))
        name, i = m.group(0), m.end()
        if text[i:i + 2] != '="':
            raise PromError("line %d: label %s: expected =\"" % (lineno, name))
        i += 2
        val = []
        while text[i] != '"':
            if text[i] == "\\":
                esc = text[i + 1]
                if esc not in '\\"n':
                    raise PromError("line %d: bad escape \\%s in label %s" % (lineno, esc, name))
                val.append({"\\": "\\", '"': '"', "n": "\n"}[esc])
                i += 2
            elif text[i] == "\n":
                raise PromError("line %d: raw newline in label value" % lineno)
            else:
                val.append(text[i])
                i += 1
        i += 1
        labels.append((name, "".join(val)))
        if text[i] == ",":
            i += 1
        elif text[i] != "}":
            raise PromError("line %d: expected , or } after label %s" % (lineno, name))


def parse(text):
    """Returns {family: {"help", "type", "samples": [(labels dict, float)]}}; raises PromError."""
    if text and not text.endswith("\n"):
        raise PromError("the last line has no newline")
    families, current, seen_series, closed = {}, None, set(), set()
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not NAME.fullmatch(parts[2]):
                raise PromError("line %d: bad %s line" % (lineno, parts[1]))
            name = parts[2]
            if name in closed:
                raise PromError("line %d: family %s appears twice (not contiguous)" % (lineno, name))
            if current and current != name:
                closed.add(current)
            f = families.setdefault(name, {"help": None, "type": None, "samples": []})
            if f["samples"]:
                raise PromError("line %d: %s after %s's samples" % (lineno, parts[1], name))
            key = parts[1].lower()
            if f[key] is not None:
                raise PromError("line %d: second %s for %s" % (lineno, parts[1], name))
            if key == "type" and parts[3] not in TYPES:
                raise PromError("line %d: unknown type %r" % (lineno, parts[3]))
            f[key] = parts[3]
            current = name
            continue
        if line.startswith("#") or not line.strip():
            continue
        m = NAME.match(line)
        if not m:
            raise PromError("line %d: bad metric name: %r" % (lineno, line))
        name, rest = m.group(0), line[m.end():]
        labels = []
        if rest.startswith("{"):
            labels, rest = _labels(rest[1:], lineno)
        if not rest.startswith(" "):
            raise PromError("line %d: expected a space before the value" % lineno)
        fields = rest.strip().split(" ")
        if len(fields) not in (1, 2) or not VALUE.match(fields[0]):
            raise PromError("line %d: bad value %r" % (lineno, rest.strip()))
        if name != current:
            if name in closed or name in families:
                raise PromError("line %d: samples of %s are not contiguous" % (lineno, name))
            if current:
                closed.add(current)
            current = name
        f = families.setdefault(name, {"help": None, "type": None, "samples": []})
        names = [k for k, _ in labels]
        if len(set(names)) != len(names):
            raise PromError("line %d: a label given twice" % lineno)
        series = (name, tuple(sorted(labels)))
        if series in seen_series:
            raise PromError("line %d: duplicate series %s%s" % (lineno, name, dict(labels)))
        seen_series.add(series)
        f["samples"].append((dict(labels), float(fields[0].replace("Inf", "inf"))))
    return families
