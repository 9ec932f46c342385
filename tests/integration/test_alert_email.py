"""Email alerts go out over real SMTP, to a tiny SMTP server this test runs."""

from __future__ import annotations

import email
import socketserver
import threading
from email import policy

import pytest

from orchestrator.observability.alerts.notifiers import DeliveryError, send


class _SMTPHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server = self.server
        self.wfile.write(b"220 test ESMTP\r\n")
        envelope: dict = {"rcpt": []}
        while True:
            line = self.rfile.readline().decode()
            if not line:
                return
            verb = line[:4].upper()
            if verb in ("EHLO", "HELO"):
                self.wfile.write(b"250 test\r\n")
            elif verb == "MAIL":
                envelope["from"] = line.split(":", 1)[1].strip()
                self.wfile.write(b"250 ok\r\n")
            elif verb == "RCPT":
                envelope["rcpt"].append(line.split(":", 1)[1].strip())
                self.wfile.write(b"250 ok\r\n")
            elif verb == "DATA":
                self.wfile.write(b"354 go ahead\r\n")
                body = []
                while (chunk := self.rfile.readline().decode()) not in (".\r\n", ""):
                    body.append(chunk)
                envelope["data"] = "".join(body)
                server.messages.append(envelope)  # type: ignore[attr-defined]
                envelope = {"rcpt": []}
                self.wfile.write(b"250 queued\r\n")
            elif verb == "QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            else:
                self.wfile.write(b"250 ok\r\n")


@pytest.fixture
def smtp_server():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SMTPHandler)
    server.daemon_threads = True
    server.messages = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


PAYLOAD = {
    "kind": "task_dead_lettered",
    "dag_id": "etl",
    "run_id": "etl__scheduled__20260101T000000Z",
    "task_id": "load",
    "message": "try 3 of 3 failed: ConnectionError",
}


def test_an_email_alert_reaches_the_smtp_server(settings, smtp_server):
    settings = settings.with_(
        smtp_host="127.0.0.1", smtp_port=smtp_server.server_address[1], smtp_from="orch@example.org"
    )
    send({"kind": "email", "target": ["ops@example.org", "dev@example.org"]}, PAYLOAD, settings)
    [mail] = smtp_server.messages
    assert mail["rcpt"] == ["<ops@example.org>", "<dev@example.org>"]
    message = email.message_from_string(mail["data"], policy=policy.default)
    assert " ".join(str(message["Subject"]).split()) == (  # long headers are folded
        "[orchestrator] task_dead_lettered: etl etl__scheduled__20260101T000000Z load"
    )
    assert message["From"] == "orch@example.org"
    assert "try 3 of 3 failed: ConnectionError" in message.get_content()


def test_an_unreachable_smtp_server_is_a_retryable_delivery_error(settings, smtp_server):
    port = smtp_server.server_address[1]
    smtp_server.shutdown()
    smtp_server.server_close()
    settings = settings.with_(smtp_host="127.0.0.1", smtp_port=port)
    with pytest.raises(DeliveryError, match=f"SMTP 127.0.0.1:{port}") as info:
        send({"kind": "email", "target": ["ops@example.org"]}, PAYLOAD, settings)
    assert info.value.retry
