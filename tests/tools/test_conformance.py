"""Lab 7's protocol conformance harness (labtools/teach/conformance.py): the kit's side of
exchanges recorded from real runs of the kit's simpleperf, replayed over real sockets on
127.0.0.1 to the lab's solution and to solutions with one mistake each."""

from __future__ import annotations

import re

import pytest
from solution_program import write_program

from labtools.teach import conformance
from labtools.tools.simpleperf import protocol


def test_the_recordings_cover_every_option_the_assignment_names():
    exchanges = conformance.load_exchanges()
    amounts = [e.options[e.options.index("-n") + 1] for e in exchanges if "-n" in e.options]
    assert {re.fullmatch(r"[\d.]+([KM]?B)", a).group(1) for a in amounts} == {"B", "KB", "MB"}
    assert any("-t" in e.options for e in exchanges)
    assert any("-i" in e.options for e in exchanges)
    assert {len(e.connections) for e in exchanges} == {1, 2, 3, 4, 5}
    assert set(conformance.UNIT_OF) == {e.name for e in exchanges}
    assert set(conformance.UNIT_OF.values()) == {"B", "KB", "MB"}
    assert (conformance.EXCHANGES_FILE.parent / "exchanges.json.meta").is_file()


def test_each_recorded_hello_says_what_its_options_asked_for():
    for exchange in conformance.load_exchanges():
        interval_ms = round(1000 * (exchange.option("-i") or 0))
        for number, conn in enumerate(exchange.connections, start=1):
            magic, version, said, parallel, interval, _session = protocol.HELLO.unpack(
                bytes.fromhex(conn["client"][0]["hex"]))
            assert (magic, version, said, parallel, interval) == \
                (protocol.MAGIC_HELLO, protocol.VERSION, number, len(exchange.connections),
                 interval_ms)
            if exchange.amount_bytes() is not None:
                assert exchange.data_bytes(number - 1) == exchange.amount_bytes()


def test_the_solution_conforms_on_both_sides(tmp_path):
    program = write_program(tmp_path)
    assert conformance.client_conformance(program) == []
    assert conformance.server_conformance(program) == []


BINARY = {"report.py": {'return f"{nbytes / UNITS[unit]:.2f} {unit}"':
                        'return f"{nbytes / {\'KB\': 1024, \'MB\': 1024 * 1024}[unit]:.2f} {unit}"'}}


def test_units_of_1024_are_named_on_both_sides(tmp_path):
    program = write_program(tmp_path, BINARY)
    client = conformance.client_conformance(program)
    assert client[0].startswith("with -f MB your client printed 1048576-byte units; MB is "
                                "1000000 bytes: ")
    server = conformance.server_conformance(program)
    assert server[0].startswith("with -f MB your server printed 1048576-byte units; MB is "
                                "1000000 bytes: ")
    assert "\n" not in client[0] and "\n" not in server[0]


def test_a_client_without_its_end_record_is_told(tmp_path):
    program = write_program(tmp_path, {"client.py": {'    sock.sendall(protocol.end(conn["sent"]))\n':
                                                ""}})
    found = conformance.client_conformance(program)
    assert found[0] == ("with -n 2MB -f B: the data on " + found[0].split(" on ")[1].split()[0]
                        + " did not end with an END record counting it (the kit's server "
                        "would report it interrupted)")
    assert conformance.server_conformance(program) == []  # its server is right


def test_a_client_that_does_not_ask_for_its_interval_is_told(tmp_path):
    program = write_program(tmp_path, {"client.py": {
        "protocol.hello(number, parallel, interval_s, session)":
            "protocol.hello(number, parallel, 0, session)"}})
    found = conformance.client_conformance(program)
    assert found[0] == ("with -t 1.5 -i 0.25 -f KB: your client's HELLOs say interval (ms) "
                        "[0], the kit client's [250]")


def test_a_server_that_counts_the_end_record_is_told(tmp_path):
    program = write_program(tmp_path, {"server.py": {
        "data_bytes = received - protocol.END.size if complete else received":
            "data_bytes = received"}})
    found = conformance.server_conformance(program)
    assert found[0].startswith("with -n 2MB -f B: your server's ACK counts ")
    assert found[0].endswith("(the END record is not data)")
    assert conformance.client_conformance(program) == []


@pytest.mark.parametrize("side", ["client", "server"])
def test_a_program_that_is_not_written_yet_fails_in_one_line(tmp_path, side):
    program = write_program(tmp_path, {"server.py": {"    listener = socket.create_server":
                                                "    raise NotImplementedError()\n"
                                                "    listener = socket.create_server"},
                                  "client.py": {"    say(\"-\" * 60, f\"A simpleperf":
                                                "    raise NotImplementedError()\n"
                                                "    say(\"-\" * 60, f\"A simpleperf"}})
    if side == "client":
        found = conformance.client_conformance(program)
        assert found and "run_client() in client.py is not written yet" in "\n".join(found)
    else:
        with pytest.raises(AssertionError, match="serve\\(\\) in server.py is not written yet"):
            conformance.server_conformance(program)
