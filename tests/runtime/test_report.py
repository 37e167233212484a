"""The job report as JSON: schema, version, date and settings first, every documented key,
and a lossless round trip."""
import json
import re
from datetime import datetime, timedelta, timezone

import pytest

import ffcode
from ffcode.runtime import Report, WorkerTimeline
from ffcode.runtime.shared import report as report_module
from ffcode.runtime.shared.report import read_group

KEYS = ["schema", "ffcode", "date", "settings", "scheme", "code", "n_workers", "pieces",
        "needed", "job", "cancelled", "rank", "encode", "compute", "decode", "total", "verify",
        "verified", "wrong",
        "stop_latency", "quiet", "wasted_after_stop", "stale", "rejected", "workers",
        "shipped", "received", "used", "wasted"]


def sample() -> Report:
    report = Report("compfs", "MDS(GF(65521), n_workers=3, recovery_threshold=2)", 3, 2, 4,
                    rank=4, encode=0.01, compute=0.2, decode=0.03, total=0.25,
                    settings={"p": 65521, "scheme": "compfs", "inputs": [[8, 8], [8]]})
    report.workers = [WorkerTimeline(i, "host", 100 + i) for i in range(3)]
    for i in range(2):
        for j in range(2):
            report.workers[i].packets.append({"index": j, "sent": 0.1, "received": 0.11,
                                              "compute": 0.05, "innovative": True})
    report.workers[2].packets.append({"index": 0, "sent": 0.3, "received": 0.31,
                                      "compute": 0.05, "innovative": False})
    return report


def test_header_fields():
    """schema 8, the running version, the date in UTC ISO 8601 at creation."""
    before = datetime.now(timezone.utc).replace(microsecond=0)
    report = sample()
    assert report.schema == report_module.SCHEMA == 10
    assert report.ffcode == ffcode.__version__
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report.date)
    made = datetime.strptime(report.date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert before <= made <= datetime.now(timezone.utc) + timedelta(seconds=1)


def test_json_keys_and_round_trip(tmp_path):
    """to_dict has the documented keys, header first; to_json writes it losslessly."""
    report = sample()
    data = report.to_dict()
    assert list(data) == KEYS
    assert data["settings"] == {"p": 65521, "scheme": "compfs", "inputs": [[8, 8], [8]]}
    assert (data["received"], data["used"], data["wasted"]) == (5, 4, 1)
    assert [w["used"] for w in data["workers"]] == [2, 2, 0]
    path = tmp_path / "r.json"
    text = report.to_json(str(path))
    assert json.loads(path.read_text()) == json.loads(text) == data


def test_docstring_names_every_key():
    """The schema documented in Report's docstring names every key the JSON has."""
    doc = Report.__doc__ + WorkerTimeline.__doc__
    missing = [key for key in KEYS + list(sample().to_dict()["workers"][0])
               if f"``{key}``" not in doc]
    assert missing == []
    assert "seconds" in Report.__doc__


GROUP_JOB = {"total": 0.5, "shipped": 100, "received": 12, "rank": 8,
             "workers": [{"packets": 4, "lost": None}, {"packets": 1, "lost": "process exited"}]}


def test_a_relays_group_jobs_are_read_back_from_its_brief():
    report = sample()
    assert read_group([report.brief(), GROUP_JOB]) == [report.brief(), GROUP_JOB]
    assert report.brief() == {"total": 0.25, "shipped": 0, "received": 5,
                              "rank": report.rank, "workers": [{"packets": 2, "lost": None}] * 2 +
                              [{"packets": 1, "lost": None}]}


@pytest.mark.parametrize("bad", [
    None, {"total": 1}, [None], [dict(GROUP_JOB, total=-1.0)],
    [dict(GROUP_JOB, total=float("inf"))], [dict(GROUP_JOB, total="1")],
    [dict(GROUP_JOB, shipped=-1)], [dict(GROUP_JOB, received=True)],
    [dict(GROUP_JOB, rank=13)], [dict(GROUP_JOB, rank=None)], [dict(GROUP_JOB, rank=-1)],
    [dict(GROUP_JOB, extra=1)], [dict(GROUP_JOB, workers={})],
    [dict(GROUP_JOB, workers=[{"packets": 1}])],
    [dict(GROUP_JOB, workers=[{"packets": 1, "lost": "x" * 201}])],
    [dict(GROUP_JOB, workers=[{"packets": 2**63, "lost": None}])],
    [dict(GROUP_JOB, workers=[{"packets": 1, "lost": None}] * 1025)],
    [GROUP_JOB] * (2**16 + 1)])
def test_a_malformed_group_note_is_refused(bad):
    with pytest.raises(ValueError, match="a relay's group"):
        read_group(bad)
