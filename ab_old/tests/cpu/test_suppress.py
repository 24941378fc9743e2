"""CPU tests of reports/suppress.py: the suppressions file and how findings match it."""

from __future__ import annotations

import pytest

from reports import suppress
from reports.session import SessionFinding
from reports.suppress import Location, SuppressionError, parse, parse_location


def finding(kind="race.raw", file="src/kernels/reduce.cu", line=42, kernel="block_sum",
            prev_file="src/kernels/reduce.cu", prev_line=40, ptx_line=77) -> SessionFinding:
    def site(f, n):
        if f is None:
            return {"file": None, "line": None, "ptx_line": ptx_line, "where": f"<ptx>:{ptx_line}"}
        return {"file": f, "line": n, "col": 5, "where": f"{f}:{n}:5"}

    return SessionFinding.from_dict(
        {"kind": kind, "kernel": kernel, "kernel_mangled": f"_Z{len(kernel)}{kernel}Pf",
         "sites": {"current": site(file, line),
                   "earlier": site(prev_file, prev_line) if prev_line else None}})


def test_location_forms():
    assert parse_location("reduce.cu:42") == Location("reduce.cu", (42, 42))
    assert parse_location("*.py:10-20") == Location("*.py", (10, 20))
    assert parse_location("src/k.cu") == Location("src/k.cu")
    assert parse_location("*") == Location("*")
    assert str(parse_location("a.cu:3-9")) == "a.cu:3-9"
    for bad in ("", ":12", "a.cu:9-3"):
        with pytest.raises(ValueError):
            parse_location(bad)


def test_file_patterns_match_basename_or_path_suffix():
    f = finding()
    assert Location("reduce.cu").matches("src/kernels/reduce.cu", 1)
    assert Location("kernels/reduce.cu").matches("/home/me/src/kernels/reduce.cu", 1)
    assert not Location("els/reduce.cu").matches("/home/me/src/kernels/reduce.cu", 1)
    assert Location("src/*/reduce.cu").matches("src/kernels/reduce.cu", 1)
    assert Location("*.cu").matches("C:\\work\\reduce.cu", 1)
    assert not Location("reduce.cu").matches(None, 1)
    assert Location("*").matches(None, None)
    assert parse("race.raw reduce.cu:40-45").match(f) is not None
    assert parse("race.raw reduce.cu:43-45").match(f) is None


def test_kind_globs_kernel_and_earlier_site():
    f = finding()
    assert parse("race.* reduce.cu").match(f)
    assert not parse("race.war reduce.cu").match(f)
    assert parse("race.raw * kernel=block_*").match(f)
    assert parse("race.raw * kernel=_Z9block_sumPf").match(f)  # the mangled name works too
    assert not parse("race.raw * kernel=transpose").match(f)
    assert parse("race.raw * earlier=reduce.cu:40").match(f)
    assert not parse("race.raw * earlier=reduce.cu:41").match(f)
    assert not parse("race.raw * earlier=*").match(finding(prev_line=None))


def test_site_without_source_matches_as_ptx():
    f = finding(file=None, prev_line=None)
    assert parse("race.raw <ptx>:77").match(f)
    assert parse("race.raw *").match(f)
    assert not parse("race.raw *.cu").match(f)


def test_first_matching_rule_wins_and_use_is_counted():
    s = parse("""
        # accepted races
        race.raw  reduce.cu:42      # the known one
        race.*    reduce.cu
        uninit.read other.cu:1
    """, "accepted.txt")
    assert len(s.rules) == 3
    rule = s.match(finding())
    assert rule is s.rules[0] and rule.origin == "accepted.txt:3" and rule.used == 1
    assert s.match(finding(kind="race.war")) is s.rules[1]
    assert [str(r) for r in s.unused()] == ["uninit.read other.cu:1"]


@pytest.mark.parametrize("text, words", [
    ("race.raw", "expected KIND LOCATION"),
    ("race.rwa reduce.cu", "matches no finding kind"),
    ("race.raw reduce.cu:x-1", "bad location"),
    ("race.raw reduce.cu kernel", "unknown option"),
    ("race.raw reduce.cu colour=red", "unknown option"),
])
def test_errors_name_the_line(text, words):
    with pytest.raises(SuppressionError) as e:
        parse("\n" + text, "supp.txt")
    assert "supp.txt:2" in str(e.value) and words in str(e.value)


def test_load_reads_a_file_and_names_a_missing_one(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("race.waw k.cu:3\n")
    assert suppress.load(p).rules[0].where == Location("k.cu", (3, 3))
    with pytest.raises(SuppressionError, match="cannot read suppressions file"):
        suppress.load(tmp_path / "missing.txt")


def test_a_file_that_is_not_utf8_is_named_not_a_traceback(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes(b"race.raw caf\xe9\n")
    with pytest.raises(SuppressionError, match=r"latin1.txt is not UTF-8 text \(byte 12\)"):
        suppress.load(p)
