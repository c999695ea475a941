"""files_upload_v2 end to end: upload URL, bytes, completion, the message, the download."""

from __future__ import annotations

import struct
import urllib.error
import urllib.request
import zlib

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lab.slack import ChannelSpec, SlackWorkspace, WorkspaceConfig


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff\x00\x00" * 2)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def test_upload_an_image_into_a_channel(workspace: SlackWorkspace, client: WebClient) -> None:
    channel = workspace.channel("incidents")["id"]
    image = tiny_png()
    response = client.files_upload_v2(
        channel=channel,
        content=image,
        filename="error-ratio.png",
        title="Error ratio, last 30 min",
        initial_comment="The chart",
    )
    file = response["file"]
    assert file["title"] == "Error ratio, last 30 min"
    assert file["mimetype"] == "image/png"
    assert file["size"] == len(image)
    message = workspace.messages("incidents")[-1]
    assert message["text"] == "The chart"
    assert [f["id"] for f in message["files"]] == [file["id"]]
    assert workspace.file_bytes(file["id"]) == image
    with urllib.request.urlopen(file["url_private"]) as download:
        assert download.headers["Content-Type"] == "image/png"
        assert download.read() == image
    info = client.files_info(file=file["id"])["file"]
    assert info["shares"]["public"][channel][0]["ts"] == message["ts"]


def test_upload_into_a_thread(workspace: SlackWorkspace, client: WebClient) -> None:
    parent = client.chat_postMessage(channel="incidents", text="diagnosis")
    client.files_upload_v2(
        channel=parent["channel"],
        thread_ts=parent["ts"],
        content="kubectl describe output",
        filename="describe.txt",
    )
    thread = workspace.messages("incidents", thread_ts=parent["ts"])
    assert len(thread) == 2
    assert thread[1]["files"][0]["name"] == "describe.txt"
    assert workspace.file_bytes(thread[1]["files"][0]["id"]) == b"kubectl describe output"


def test_several_files_in_one_message(workspace: SlackWorkspace, client: WebClient) -> None:
    client.files_upload_v2(
        channel=workspace.channel("incidents")["id"],
        file_uploads=[
            {"content": "a", "filename": "a.txt", "title": "A"},
            {"content": "b", "filename": "b.txt", "title": "B"},
        ],
    )
    message = workspace.messages("incidents")[-1]
    assert [f["title"] for f in message["files"]] == ["A", "B"]


def test_completion_needs_the_bytes(workspace: SlackWorkspace, client: WebClient) -> None:
    reserved = client.files_getUploadURLExternal(filename="x.txt", length=3)
    with pytest.raises(SlackApiError) as caught:
        client.files_completeUploadExternal(files=[{"id": reserved["file_id"], "title": "x"}])
    assert caught.value.response["error"] == "file_not_found"


def test_upload_url_is_single_use(workspace: SlackWorkspace, client: WebClient) -> None:
    reserved = client.files_getUploadURLExternal(filename="x.txt", length=3)
    with urllib.request.urlopen(urllib.request.Request(reserved["upload_url"], data=b"abc")) as up:
        assert up.status == 200
    client.files_completeUploadExternal(files=[{"id": reserved["file_id"], "title": "x"}])
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(urllib.request.Request(reserved["upload_url"], data=b"abc"))
    assert caught.value.code == 404
    caught.value.close()


def test_upload_where_the_bot_is_not_a_member() -> None:
    config = WorkspaceConfig(
        channels=(ChannelSpec(name="quiet", members=("*",), bot_member=False),)
    )
    with SlackWorkspace(config) as ws:
        client = WebClient(base_url=ws.api_url, token=ws.config.bot_token)
        with pytest.raises(SlackApiError) as caught:
            client.files_upload_v2(channel=ws.channel("quiet")["id"], content="x", filename="x.txt")
        assert caught.value.response["error"] == "not_in_channel"
        assert ws.messages("quiet") == []
