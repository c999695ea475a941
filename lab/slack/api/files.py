"""Files, the way `WebClient.files_upload_v2` uploads them.

Three steps, as in Slack: `files.getUploadURLExternal` reserves a file id and returns a
loopback upload URL; the client POSTs the bytes there (`receive_upload`); then
`files.completeUploadExternal` shares the files into a channel or thread as one message.
"""

from __future__ import annotations

import mimetypes
import secrets
from pathlib import PurePosixPath

from agents.model import JsonObject
from lab.slack.api.chat import require_post_access
from lab.slack.api.context import Call
from lab.slack.content import bot_message, thread_root
from lab.slack.errors import ApiError, invalid_arguments
from lab.slack.events import message_events
from lab.slack.records import File
from lab.slack.store import WorkspaceState
from lab.slack.wire import file_json

ALT_TXT_MAX = 1000


def _types(filename: str, snippet_type: str) -> tuple[str, str]:
    if snippet_type:
        return "text/plain", snippet_type
    mimetype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    extension = PurePosixPath(filename).suffix.lstrip(".").lower()
    filetype = {"jpeg": "jpg", "txt": "text", "": "binary"}.get(extension, extension)
    return mimetype, filetype


def get_upload_url(call: Call) -> JsonObject:
    call.require_scope("files:write")
    args, state = call.args, call.state
    filename = args.required("filename")
    length = args.number("length", -1)
    if length < 0:
        raise invalid_arguments("missing required field: length")
    alt_txt = args.text("alt_txt") or args.text("alt_text")
    if len(alt_txt) > ALT_TXT_MAX:
        raise ApiError("alt_txt_too_large")
    mimetype, filetype = _types(filename, args.text("snippet_type"))
    file = File(
        id=state.new_id("F"),
        name=PurePosixPath(filename).name,
        title=filename,
        user=call.actor,
        created=state.now(),
        length=length,
        alt_txt=alt_txt,
        snippet_type=args.text("snippet_type"),
        mimetype=mimetype,
        filetype=filetype,
        upload_key=secrets.token_urlsafe(16),
    )
    with state.lock:
        state.files[file.id] = file
    return {
        "ok": True,
        "upload_url": f"{state.base_url}/upload/v1/{file.upload_key}",
        "file_id": file.id,
    }


def receive_upload(state: WorkspaceState, key: str, data: bytes) -> bool:
    """Bytes POSTed to an upload URL. False for an unknown or already completed upload."""
    with state.lock:
        file = next((f for f in state.files.values() if f.upload_key == key), None)
        if file is None or file.completed:
            return False
        file.data = data
        return True


def complete_upload(call: Call) -> JsonObject:
    call.require_scope("files:write")
    args, state = call.args, call.state
    items = args.decoded("files")
    if not isinstance(items, list) or not items:
        raise invalid_arguments("files must be a non-empty JSON array")
    channel_ids = [c for c in args.text("channels").split(",") if c] or (
        [args.text("channel_id")] if args.has("channel_id") else []
    )
    with state.lock:
        files: list[File] = []
        for item in items:
            file = state.files.get(str(item.get("id", ""))) if isinstance(item, dict) else None
            if file is None or file.data is None or file.completed or file.user != call.actor:
                raise ApiError("file_not_found")
            files.append(file)
        channels = [call.channel(c) for c in channel_ids]
        for channel in channels:
            require_post_access(call, channel)
        thread_ts = thread_root(state, channels[0], args.text("thread_ts")) if channels else ""
        for file, item in zip(files, items, strict=True):
            file.completed = True
            if item.get("title"):
                file.title = str(item["title"])
        for channel in channels:
            message = bot_message(
                state,
                channel,
                text=args.text("initial_comment"),
                blocks=None,
                thread_ts=thread_ts,
            )
            message.file_ids = [f.id for f in files]
            for file in files:
                file.shares.setdefault(channel.id, []).append(message.ts)
            if state.config.echo_bot_messages:
                call.events.extend(message_events(state, message))
    state.touch()
    return {"ok": True, "files": [file_json(state, f) for f in files]}


def info(call: Call) -> JsonObject:
    call.require_scope("files:read")
    file = call.state.files.get(call.args.required("file", error="file_not_found"))
    if file is None or not file.completed:
        raise ApiError("file_not_found")
    return {
        "ok": True,
        "file": file_json(call.state, file),
        "comments": [],
        "response_metadata": {"next_cursor": ""},
    }
