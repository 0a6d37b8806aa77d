"""``simdist bench messages``: the three subscriber configurations and the report (timings are benchmarks)."""

import json

from simdist_ros import message_bench


def test_subscribers_of_more_topics_take_more_messages_and_the_report_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ROS_DOMAIN_ID", "87")  # away from other tests' graphs
    out = tmp_path / "messages.json"
    assert message_bench.main(["--seconds", "1.5", "--rate", "40", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    clock_only, one, every = report["runs"]
    assert clock_only["topics"] == [] and clock_only["sensor_messages_per_s"] == 0
    assert one["topics"] == ["joint_states"] and every["topics"] == list(message_bench.SENSOR_TOPICS)
    assert every["sensor_messages_per_s"] > one["sensor_messages_per_s"] > 0
    assert all(r["callbacks_per_s"] > 0 and r["cpu_percent"] >= 0 for r in report["runs"])
    assert "cpu_ms_per_message" in report and report["machine"]["cores"] >= 1
    assert "CPU per received message" in capsys.readouterr().out


def test_bad_arguments_are_a_usage_error(capsys):
    assert message_bench.main(["--rate", "0"]) == 2
    assert "--rate" in capsys.readouterr().err
