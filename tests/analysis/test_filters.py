"""Filter expressions: the grammar, its error messages, and what each filter selects."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.profiles import GOLEM
from golem_proxy.analysis.filter_tree import bodies_read, reads_bodies, undecided
from golem_proxy.analysis.filters import (
    FILTER_HELP,
    And,
    Filter,
    FilterError,
    Not,
    Or,
    parse_filter,
)
from golem_proxy.analysis.flows import Flow, FlowTracker
from golem_proxy.bulk import ANY, BLOB, elided_kinds, may_lie_in_blob
from tests.support.trace_builder import golem_session


@pytest.fixture(scope="module")
def flows() -> list[Flow]:
    tracker = FlowTracker(GOLEM)
    for event in golem_session().events:
        tracker.apply(event)
    return tracker.flows


def select(flows: list[Flow], text: str) -> list[str]:
    """The ids (or a stand-in) of the flows a filter selects, in order."""
    chosen = parse_filter(text)
    return [describe(flow) for flow in flows if chosen.matches(flow, GOLEM)]


def describe(flow: Flow) -> str:
    if flow.request is not None and flow.request.message.id is not None:
        return str(flow.request.message.id)
    if flow.response is not None and flow.response.message.id is not None:
        return f"resp:{flow.response.message.id}"
    if flow.frame_error is not None:
        return flow.frame_error.kind.value
    return f"#{flow.number}"


def test_the_session_has_the_rows_the_filters_need(flows: list[Flow]) -> None:
    assert [describe(flow) for flow in flows] == [
        "a1", "a2", "a3", "a4", "#5", "a6", "a7", "resp:zz", "a8", "b1", "oversized", "b2",
        "truncated", "c1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("~m ping", ["a1", "a6"]),
        ("~m ^creation\\.", ["a2", "a3"]),
        ("~m PING", ["a1", "a6"]),  # case-insensitive
        ("~e", ["a3", "a4", "#5", "a7", "a8", "oversized", "b2", "truncated"]),
        ("~c -32601", ["a3"]),
        ("~c METHOD_NOT_FOUND", ["a3"]),
        ("~c method_not_found", ["a3"]),
        ("~c OBJECT_NOT_FOUND", ["a4"]),
        ("~c INTERNAL_ERROR", ["#5"]),
        ("~c -32000", []),
        ("~route gh", ["b1", "oversized", "b2", "truncated"]),
        ("~slow 120", ["a2", "b1"]),
        ("~slow 120.5", ["b1"]),
        ("~violation", ["#5", "a6", "a7", "resp:zz", "oversized", "truncated"]),
        ("~rule orphan", ["resp:zz"]),
        ("~rule ^golem\\.message", ["#5", "a7"]),
        ("~pending", ["c1"]),
        ("~conn 3", ["c1"]),
        ("~q Boîte", ["a2"]),
        ('~q "\\"guid\\""', ["a4"]),
        ("~s alive", ["a1", "a6"]),
        ("~s g-1", ["a2"]),
        ("~marked", []),
        ("hexagon", ["a3"]),  # method and response body
        ("NOPE", ["a4"]),  # request body, case-insensitive
        ('"create_box"', ["a2"]),
    ],
)
def test_each_filter_selects_what_it_says(
    flows: list[Flow], text: str, expected: list[str]
) -> None:
    assert select(flows, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!~e ~conn 1", ["a1", "a2", "a6", "resp:zz"]),
        ("~conn 1 & !~e", ["a1", "a2", "a6", "resp:zz"]),
        ("~m ping | ~c -32601", ["a1", "a3", "a6"]),
        # ! > & > |: this is ~pending | (~route gh & ~e)
        ("~pending | ~route gh ~e", ["oversized", "b2", "truncated", "c1"]),
        ("(~pending | ~route gh) ~e", ["oversized", "b2", "truncated"]),
        ("!(~e | ~violation) & ~conn 1", ["a1", "a2"]),
        ("!!~pending", ["c1"]),
    ],
)
def test_operators_and_precedence(flows: list[Flow], text: str, expected: list[str]) -> None:
    assert select(flows, text) == expected


def test_marked_flows(flows: list[Flow]) -> None:
    flows[1].marked = True
    try:
        assert select(flows, "~marked") == ["a2"]
    finally:
        flows[1].marked = False


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("", "expected a filter expression", 0),
        ("   ", "expected a filter expression", 3),
        ("~m", "expected an argument after ~m, found the end of the expression", 2),
        ("~m ~e", "expected an argument after ~m, found '~e'", 3),
        ("~bogus x", "unknown filter ~bogus", 0),
        ("(~e", "expected ')' to close the '(' at position 0", 3),
        ("~e)", "unexpected ')'", 2),
        ("~e |", "expected a filter, '!' or '(', found the end of the expression", 4),
        ("~e & | ~m x", "expected a filter, '!' or '(', found '|'", 5),
        ("~slow fast", "~slow needs a number of milliseconds, not 'fast'", 6),
        ("~conn one", "~conn needs an integer, not 'one'", 6),
        ("~m '(ping'", "invalid regular expression for ~m", 3),
        ('~q "open', "unterminated string", 3),
        ("~c NOPE", "unknown error code 'NOPE' for ~c; use an integer or one of", 3),
        ("~e ~c ''", "unknown error code '' for ~c", 6),
    ],
)
def test_errors_say_where_and_what(text: str, message: str, position: int) -> None:
    with pytest.raises(FilterError) as caught:
        parse_filter(text)
    assert message in str(caught.value)
    assert caught.value.position == position
    assert f"at position {position}" in str(caught.value)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("~m ping", "~m ping"),
        ("~m   ping   ~e", "~m ping & ~e"),
        ("a | b c", "a | b & c"),
        ("(a | b) c", "(a | b) & c"),
        ("!(a b)", "!(a & b)"),
        ("!(a | b)", "!(a | b)"),
        ("((a))", "a"),
        ("'two words'", '"two words"'),
        ('~q "\\d+"', "~q \\d+"),
        ('~q "a\\"b"', '~q "a\\"b"'),
        ("~c -32601", "~c -32601"),
    ],
)
def test_str_is_canonical(text: str, canonical: str) -> None:
    parsed = parse_filter(text)
    assert str(parsed) == canonical
    assert parse_filter(str(parsed)) == parsed


def test_structure_follows_precedence() -> None:
    parsed = parse_filter("!a b | c")
    assert isinstance(parsed, Or)
    first = parsed.parts[0]
    assert isinstance(first, And) and isinstance(first.parts[0], Not)


def test_an_unknown_code_name_lists_the_known_ones() -> None:
    # It used to match nothing, silently: a typo looked like "no such errors".
    with pytest.raises(FilterError) as caught:
        parse_filter("~c OBJECT_NOT_FUOND")
    for name in ("OBJECT_NOT_FOUND", "METHOD_NOT_FOUND", "ERR_TAB_NOT_OPEN", "TIMEOUT"):
        assert name in str(caught.value)


def test_bare_q_and_s_choose_the_side_of_a_flow(flows: list[Flow]) -> None:
    # mitmproxy's meaning: ~q a request with no response (yet), ~s a flow with a response.
    requests_only = [f for f in flows if f.request is not None and f.response is None]
    assert [f for f in flows if parse_filter("~q").matches(f, GOLEM)] == requests_only
    assert requests_only
    answered = [f for f in flows if f.response is not None]
    assert [f for f in flows if parse_filter("~s").matches(f, GOLEM)] == answered
    assert select(flows, "~s & ~m ping") == ["a1", "a6"]
    assert select(flows, "~q ~m ping") == []  # both pings were answered


def test_q_and_s_take_an_argument_only_when_a_word_follows() -> None:
    assert parse_filter("~q alive") == parse_filter('~q "alive"')
    assert str(parse_filter("~q & alive")) == "~q & alive"
    assert str(parse_filter("(~s) (~m x)")) == "~s & ~m x"
    assert str(parse_filter("!~q | ~s")) == "!~q | ~s"


def test_help_lists_every_filter() -> None:
    names = {row[0].split()[0] for row in FILTER_HELP}
    for name in ("~m", "~e", "~c", "~route", "~slow", "~violation", "~rule", "~pending"):
        assert name in names
    for name in ("~conn", "~q", "~s", "~marked", "WORD"):
        assert name in names


def _q(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


_ARGS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=8)
# ~c takes an integer or a known code (an unknown word is an error: it would match nothing).
_CODES = st.one_of(
    st.integers(-33000, 33000).map(str),
    st.sampled_from(["method_not_found", "ERR_TAB_NOT_OPEN", "tab_not_open", "TIMEOUT", "OK"]),
)
_SAFE_REGEX = st.from_regex(r"[a-z0-9_.\\\"' ()|&!~]{0,8}", fullmatch=True).filter(
    lambda s: _compiles(s)
)


_LEAVES = st.one_of(
    st.sampled_from(["~e", "~violation", "~pending", "~marked", "~q", "~s"]),
    st.builds(lambda a: f"~q {_q(a)}", _SAFE_REGEX),
    st.builds(lambda a: f"~m {_q(a)}", _SAFE_REGEX),
    st.builds(lambda a: f"~rule {_q(a)}", _SAFE_REGEX),
    st.builds(lambda a: f"~route {_q(a)}", _ARGS),
    st.builds(lambda a: f"~c {_q(a)}", _CODES),
    st.builds(lambda n: f"~conn {n}", st.integers(-5, 99)),
    st.builds(lambda n: f"~slow {n}", st.integers(0, 10_000)),
    st.builds(_q, _ARGS),
)


def _before_a_word(text: str) -> str:
    """``text`` as the left of an implicit ``&``: grouped when it ends with a predicate that
    takes an optional argument (``~q "["`` is ``~q`` of the regex ``[``, not ``~q & "["``)."""
    return f"({text})" if re.search(r"~[a-z]+$", text) else text


_EXPRESSIONS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.builds(lambda a: f"!{a}", inner),
        st.builds(lambda a: f"({a})", inner),
        st.builds(lambda a, b: f"{a} & {b}", inner, inner),
        st.builds(lambda a, b: f"{_before_a_word(a)} {b}", inner, inner),
        st.builds(lambda a, b: f"{a} | {b}", inner, inner),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(_EXPRESSIONS)
def test_str_parses_back_to_an_equal_filter(text: str) -> None:
    parsed = parse_filter(text)
    assert parse_filter(str(parsed)) == parsed
    assert str(parse_filter(str(parsed))) == str(parsed)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="~!&|() \"'\\abcme-1", max_size=20))
def test_any_input_parses_or_raises_filter_error(text: str) -> None:
    try:
        parsed = parse_filter(text)
    except FilterError as exc:
        assert 0 <= exc.position <= len(text)
    else:
        assert isinstance(parsed, Filter)


@settings(max_examples=100, deadline=None)
@given(_EXPRESSIONS)
def test_not_inverts_and_or_combines(text: str) -> None:
    flows_ = _flows_once()
    parsed = parse_filter(text)
    negated = parse_filter(f"!({text})")
    both = parse_filter(f"({text}) ~e")
    either = parse_filter(f"({text}) | ~e")
    for flow in flows_:
        hit = parsed.matches(flow, GOLEM)
        assert negated.matches(flow, GOLEM) is (not hit)
        assert both.matches(flow, GOLEM) is (hit and flow.is_error)
        assert either.matches(flow, GOLEM) is (hit or flow.is_error)


_CACHE: list[list[Flow]] = []


def _flows_once() -> list[Flow]:
    if not _CACHE:
        tracker = FlowTracker(GOLEM)
        for event in golem_session().events:
            tracker.apply(event)
        _CACHE.append(tracker.flows)
    return _CACHE[0]


def test_nesting_deeper_than_the_limit_is_a_filter_error_not_a_stack_overflow() -> None:
    assert str(parse_filter("(" * 64 + "~q" + ")" * 64)) == "~q"
    assert str(parse_filter("!!~q")) == "!!~q"
    for text in ("(" * 100_000 + "~q" + ")" * 100_000, "!" * 100_000 + "~q", "(!" * 33 + "~q"):
        with pytest.raises(FilterError, match="nested deeper than 64 levels"):
            parse_filter(text)


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        ("needle", True),
        ("~s 100007", True),
        ("~q x & ~m scene.", True),
        ("!(~e | ~s boom)", True),
        ("~s", False),  # a flow with a response: no body read
        ("~q | ~m scene. & ~slow 5", False),
        ("~tool capture | ~layer mcp", False),
    ],
)
def test_a_filter_says_whether_it_reads_bodies(text: str, reads: bool) -> None:
    assert reads_bodies(parse_filter(text)) is reads


def test_a_filter_says_which_bodies_it_reads() -> None:
    assert bodies_read(parse_filter("~q x | ~m y")) == {"request"}
    assert bodies_read(parse_filter("!~s x")) == {"response"}
    assert bodies_read(parse_filter("~q x & word")) == {"request", "response"}
    assert bodies_read(parse_filter("~q & ~s")) == frozenset()


@pytest.mark.parametrize(
    ("text", "unread", "expected"),
    [
        ("zzz", {"response"}, True),  # nothing found in what was kept: unknown
        ("!zzz", {"response"}, True),
        ("zzz", set(), False),  # everything searched
        ("~q zzz", {"response"}, False),  # reads the request only
        ("~m ping & zzz", {"response"}, True),
        ("~m nothing & zzz", {"response"}, False),  # false whatever the body holds
        ("~m ping | zzz", {"response"}, False),  # true whatever the body holds
        ("~m nothing | zzz", {"response"}, True),
        ("ping", {"request", "response"}, True),  # found in what was kept: maybe a placeholder
        ("ping", {"response"}, True),
        ("~q ping", {"response"}, False),  # the request's body was read whole
        ("!~q ping & zzz", {"response"}, False),
        ("(zzz | ~s yyy) & ~m ping", {"response"}, True),
    ],
)
def test_a_filter_says_whether_what_it_did_not_read_could_change_its_answer(
    flows: list[Flow], text: str, unread: set[str], expected: bool
) -> None:
    """The first flow (a ``ping`` and its answer) read with the numbers of ``unread`` sides
    elided: whether the filter's answer could turn on them."""
    ping = flows[0]
    assert ping.request is not None and ping.request.message.method == "ping"
    assert undecided(parse_filter(text), ping, GOLEM, frozenset(unread)) is expected


@pytest.mark.parametrize(
    ("text", "blobs", "expected"),
    [
        ("zzz", {"response"}, True),  # may lie in the blob elided
        ("zzz", set(), False),
        ('"a b"', {"response"}, False),  # a space lies in no blob
        ('~s "a b"', {"response"}, False),
        ("~s a.b", {"response"}, True),  # a regex may match anything
        ('~s "a b" | zzz', {"response"}, True),
        ("~m nothing & zzz", {"response"}, False),
        ("~q zzz", {"response"}, False),  # the request was read whole
    ],
)
def test_a_filter_says_whether_a_blob_it_did_not_read_could_change_its_answer(
    flows: list[Flow], text: str, blobs: set[str], expected: bool
) -> None:
    ping = flows[0]
    assert undecided(parse_filter(text), ping, GOLEM, frozenset(), frozenset(blobs)) is expected


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        ("xxxxxxxxxx", True),
        ("iVBORw0KGgo=", True),
        ('"image":"iVBOR', True),  # across the blob's opening quote
        ('AAAA=="}', True),  # across its closing quote
        ('"width": 640', False),
        ("a b", False),
        ("{}", False),
        ("600000 bytes", True),  # the placeholder's own text
        ("<12 bytes elided>", True),
        ("", False),
    ],
)
def test_what_text_may_lie_in_a_blob(needle: str, expected: bool) -> None:
    assert may_lie_in_blob(needle) is expected


def test_what_a_skeleton_had_elided() -> None:
    blob, numbers = "<300000 bytes elided>", ["<16384 numbers elided>"]
    assert elided_kinds({"result": {"image": blob, "n": 1}}) == {BLOB}
    assert elided_kinds({"result": {"vertices": numbers}}) == {ANY}
    assert ANY in elided_kinds({"a": [blob], "b": {"c": "<12 bytes not kept>"}})
    assert elided_kinds({"result": ["<70000 bytes not parsed>"]}) == {ANY}
    assert elided_kinds({"result": ["<9000 items elided>"]}) == {ANY}
    assert elided_kinds({blob: 1}) == {BLOB}  # a key elided
    assert elided_kinds({"said": "a <5 bytes elided> b", "list": [1, 2]}) == set()
    deep: object = blob
    for _ in range(40):
        deep = [deep]
    assert elided_kinds(deep) == {ANY}  # not walked to its end: it may hold anything
