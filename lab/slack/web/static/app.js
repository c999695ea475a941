// The local Slack workspace page: who am I, channels, threads, pins, modals, App Home.
// State comes from /ui/state (what the chosen user sees); actions go to /ui/act; /ui/live
// says when to refresh. Falls back to polling once a second if the socket is unavailable.
"use strict";

const { renderBlocks, mrkdwn, textObject, collectInputs, esc, emoji } = window.BlockKit;
const $ = (id) => document.getElementById(id);
// The app's icon: a small cloud (no emoji font needed).
const APP_ICON = '<svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true">' +
  '<path fill="#fff" d="M7 18h10.5a4 4 0 0 0 .6-7.96A5.5 5.5 0 0 0 7.6 8.6 4.7 4.7 0 0 0 7 18z"/></svg>';

const S = {
  user: new URLSearchParams(location.search).get("user") || localStorage.getItem("slack-lab-user") || "",
  channel: "",
  thread: "",
  panel: "",          // "thread" | "pins" | ""
  view: "channel",    // "channel" | "home" | "messages" (the app's DM)
  data: null,
  version: -1,
  modalKey: "",
  noticesSeen: {},
  directSeen: {},
  fetching: false,
  again: false,
  highlight: "",
};

readHash();

// ----------------------------------------------------------------------------- helpers

function readHash() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  if (parts[0] === "home") { S.view = "home"; return; }
  if (parts[0]) { S.channel = decodeURIComponent(parts[0]); S.view = "channel"; }
  if (parts[1]) { S.thread = parts[1]; S.panel = "thread"; S.highlight = parts[1]; }
}

function writeHash() {
  const hash = S.view === "home" ? "#/home" : `#/${S.channel}${S.panel === "thread" && S.thread ? "/" + S.thread : ""}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

function user(id) { return (S.data && S.data.users.find((u) => u.id === id)) || null; }
function userName(id) {
  const found = user(id);
  if (!found) return id;
  return found.is_bot ? (S.data.app.name) : (found.real_name || found.name);
}
function channelName(id) {
  const found = S.data && S.data.channels.find((c) => c.id === id);
  return found ? found.name : id;
}
function groupHandle(id) {
  const found = S.data && S.data.groups.find((g) => g.id === id);
  return found ? found.handle : id;
}
function initials(name) {
  return name.split(/\s+/).map((w) => w[0] || "").join("").slice(0, 2).toUpperCase();
}
function color(id) {
  let hash = 0;
  for (const ch of id) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  return `hsl(${hash % 360}, 45%, 45%)`;
}
function time(ts) {
  // UTC, as the app's messages write their times.
  const date = new Date(parseFloat(ts) * 1000);
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", timeZone: "UTC" });
}
function node(tag, attrs, html) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    el.setAttribute(k, v === true ? "" : String(v));
  }
  if (html !== undefined) el.innerHTML = html;
  return el;
}

function toast(text, kind) {
  const item = node("div", { class: `toast ${kind || ""}`, "data-testid": "toast" }, esc(text));
  $("toasts").appendChild(item);
  setTimeout(() => item.remove(), 6000);
}

function blockContext(mode, extra) {
  return {
    mode,
    userName, channelName, groupHandle,
    people: () => S.data.users.filter((u) => !u.is_bot && u.id !== "USLACKBOT"),
    channels: () => S.data.channels.filter((c) => !c.is_im),
    confirm: showConfirm,
    onAction: () => {},
    ...extra,
  };
}

// ----------------------------------------------------------------------------- server

async function refresh() {
  if (S.fetching) { S.again = true; return; }
  S.fetching = true;
  try {
    const asked = { user: S.user, channel: S.channel };
    const query = new URLSearchParams(asked);
    const response = await fetch(`/ui/state?${query}`);
    if (!response.ok) throw new Error(`state: HTTP ${response.status}`);
    const data = await response.json();
    // Someone navigated or switched user while this answer was on its way: it describes the
    // old channel, and adopting its channel would send them back there. Ask again instead.
    if (S.channel !== asked.channel || S.user !== asked.user) { S.again = true; return; }
    S.data = data;
    S.version = S.data.version;
    S.user = S.data.me;
    localStorage.setItem("slack-lab-user", S.user);
    if (S.data.channel && S.view !== "home") S.channel = S.data.channel.id;
    render();
  } catch (error) {
    console.warn(error);
  } finally {
    S.fetching = false;
    if (S.again) { S.again = false; refresh(); }
  }
}

async function act(body) {
  const response = await fetch("/ui/act", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ user: S.user, ...body }),
  });
  const result = await response.json();
  // An app that did not answer is reported by the workspace itself (a Slackbot message or a
  // notice), so only refusals before sending are toasted here.
  if (!result.ok && !Object.keys(result.errors || {}).length) toast(result.message || result.error, "error");
  refresh();
  return result;
}

function connectLive() {
  let polling = null;
  const poll = () => { if (!polling) polling = setInterval(refresh, 1000); };
  let socket;
  try {
    socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ui/live`);
  } catch (error) {
    poll();
    return;
  }
  socket.onmessage = (event) => {
    const { version } = JSON.parse(event.data);
    if (version !== S.version) refresh();
  };
  socket.onopen = () => { if (polling) { clearInterval(polling); polling = null; } };
  socket.onclose = () => { poll(); setTimeout(connectLive, 2000); };
}

// ----------------------------------------------------------------------------- rendering

function render() {
  writeHash();
  renderSidebar();
  if (S.view === "home") renderHome(); else renderChannel();
  renderPanel();
  renderModal();
  renderNotices();
  renderDirect();
}

function renderSidebar() {
  const data = S.data;
  $("team-name").textContent = data.team.name;
  const picker = $("user-picker");
  const people = data.users.filter((u) => !u.is_bot && u.id !== "USLACKBOT");
  const signature = people.map((u) => u.id).join(",");
  if (picker.dataset.signature !== signature) {
    picker.innerHTML = "";
    for (const person of people) {
      const label = `${person.real_name || person.name}${person.is_admin ? " (admin)" : ""}`;
      picker.appendChild(node("option", { value: person.id, "data-user-name": person.name }, esc(label)));
    }
    picker.dataset.signature = signature;
  }
  picker.value = S.user;
  const me = user(S.user);
  $("who-title").textContent = me ? (me.title || `@${me.name}`) : "";

  const apps = $("apps");
  apps.innerHTML = "";
  const inApp = S.view === "home" || (data.channel && data.channel.is_im && S.view === "channel");
  const appLink = node("a", {
    href: "#/home", class: inApp ? "active" : "", "data-testid": "app-home-link",
  }, `<span class="hash app-dot">${APP_ICON}</span>${esc(data.app.name)}` +
     `<span class="count" data-testid="app-dm-count">${(data.direct && data.direct.count) || ""}</span>`);
  appLink.addEventListener("click", (event) => { event.preventDefault(); openHome(); });
  apps.appendChild(node("li")).appendChild(appLink);

  const list = $("channels");
  list.innerHTML = "";
  for (const channel of data.channels.filter((c) => !c.is_im)) {
    const active = S.view === "channel" && channel.id === S.channel;
    const link = node("a", {
      href: `#/${channel.id}`,
      class: `${active ? "active" : ""} ${channel.is_member ? "" : "not-member"}`,
      "data-testid": "channel-link",
      "data-channel-id": channel.id,
      "data-channel-name": channel.name,
    }, `<span class="hash">${channel.is_private ? "🔒" : "#"}</span>${esc(channel.name)}` +
       `<span class="count">${channel.message_count || ""}</span>`);
    link.addEventListener("click", (event) => { event.preventDefault(); openChannel(channel.id); });
    list.appendChild(node("li")).appendChild(link);
  }

  const status = $("status");
  if (data.transport === "http") {
    status.innerHTML = `<span class="dot on"></span>HTTP mode (signed requests)`;
  } else {
    const n = data.connected;
    status.innerHTML = `<span class="dot ${n ? "on" : ""}"></span>Socket Mode · ` +
      (n ? `${n} connection${n > 1 ? "s" : ""}` : "app not connected");
  }
  if (data.clock_note) {
    status.appendChild(node("div", { class: "clock-note", "data-testid": "clock-note" },
      `🕐 ${esc(data.clock_note)}`));
  }
}

function messageNode(message, { inThread, continued }) {
  const isApp = Boolean(message.bot_id) || message.user === S.data.app.bot_user_id;
  const name = isApp ? S.data.app.name : userName(message.user);
  const classes = ["message"];
  if (message.is_ephemeral) classes.push("ephemeral");
  if (["channel_topic", "channel_join", "channel_name", "tombstone"].includes(message.subtype)) classes.push("system");
  if (continued) classes.push("continued");
  if (S.highlight && S.highlight === message.ts) classes.push("highlight");
  const item = node("div", {
    class: classes.join(" "),
    "data-testid": "message",
    "data-ts": message.ts,
    "data-user": message.user,
    "data-ephemeral": message.is_ephemeral ? "true" : "false",
  });
  const avatar = node("div", { class: `avatar ${isApp ? "app" : ""}` }, isApp ? APP_ICON : esc(initials(name)));
  if (!isApp) avatar.style.background = color(message.user || "x");
  item.appendChild(avatar);
  const body = node("div", { class: "body" });
  body.appendChild(node("div", { class: "meta" },
    `<span class="name">${esc(name)}</span>${isApp ? '<span class="badge">APP</span>' : ""}` +
    `<span class="time" title="${esc(new Date(parseFloat(message.ts) * 1000).toString())}">${time(message.ts)}</span>`));
  const hasRichBlocks = message.blocks && message.blocks.some((b) => b.type !== "rich_text");
  if (message.blocks && message.blocks.length && (hasRichBlocks || !message.text)) {
    const ctx = blockContext("message", {
      onAction: ({ element, blockId, value }) => act({
        action: "click", channel: message.channel || S.channel, ts: message.ts,
        action_id: element.action_id, block_id: blockId, value,
      }),
    });
    body.appendChild(renderBlocks(message.blocks, ctx));
  } else if (message.text) {
    body.appendChild(node("div", { class: "text" }, mrkdwn(message.text, blockContext("message"))));
  }
  if (message.edited) body.appendChild(node("span", { class: "edited" }, "(edited)"));
  if (message.files && message.files.length) body.appendChild(filesNode(message.files));
  if (message.reactions) {
    const row = node("div", { class: "reactions" });
    for (const reaction of message.reactions) {
      row.appendChild(node("span", { class: "reaction", title: reaction.users.map(userName).join(", ") },
        `${emoji(":" + esc(reaction.name) + ":")} ${reaction.count}`));
    }
    body.appendChild(row);
  }
  if (message.pinned_to) body.appendChild(node("div", { class: "pinned-note" }, "📌 Pinned"));
  if (message.is_ephemeral) body.appendChild(node("div", { class: "ephemeral-note" }, "👁 Only visible to you"));
  if (!inThread && message.reply_count) {
    const link = node("button", { class: "thread-link", type: "button", "data-testid": "thread-link" },
      `${message.reply_count} ${message.reply_count === 1 ? "reply" : "replies"}`);
    link.addEventListener("click", () => openThread(message.ts));
    body.appendChild(link);
  }
  item.appendChild(body);
  return item;
}

function filesNode(files) {
  const box = node("div", { class: "files" });
  for (const file of files) {
    if ((file.mimetype || "").startsWith("image/")) {
      const figure = node("figure", { class: "file-image", "data-testid": "file" });
      figure.appendChild(node("img", { src: file.url_private, alt: file.alt_txt || file.title || file.name }));
      figure.appendChild(node("figcaption", {}, esc(file.title || file.name)));
      box.appendChild(figure);
    } else {
      box.appendChild(node("a", {
        class: "file-card", href: file.url_private, target: "_blank", "data-testid": "file",
      }, `<b>${esc(file.title || file.name)}</b><small>${esc(file.pretty_type)} · ${file.size} bytes</small>`));
    }
  }
  return box;
}

function renderMessages(container, messages, inThread) {
  const atBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 60;
  const changedChannel = container.dataset.channel !== S.channel;
  container.innerHTML = "";
  let previous = null;
  for (const message of messages) {
    const continued = previous && previous.user === message.user && !message.is_ephemeral &&
      !previous.is_ephemeral && parseFloat(message.ts) - parseFloat(previous.ts) < 120 &&
      !previous.reply_count;
    container.appendChild(messageNode(message, { inThread, continued }));
    previous = message;
  }
  if (!messages.length) container.appendChild(node("div", { class: "empty" }, "No messages yet."));
  container.dataset.channel = S.channel;
  if (atBottom || changedChannel) container.scrollTop = container.scrollHeight;
}

function renderChannel() {
  const channel = S.data.channel;
  $("home").hidden = true;
  $("messages").hidden = false;
  const header = $("main-header");
  if (!channel) { header.innerHTML = "<h1>No channel</h1>"; return; }
  header.innerHTML = "";
  if (channel.is_im) {
    appHeader(header, "messages");
  } else {
    header.appendChild(node("h1", { "data-testid": "channel-title" },
      `${channel.is_private ? "🔒" : "#"} ${esc(channel.name)}`));
  }
  if (!channel.is_im) renderChannelTools(header, channel);
  const top = channel.messages.filter((m) => !m.thread_ts || m.thread_ts === m.ts ||
    m.subtype === "thread_broadcast");
  renderMessages($("messages"), top.map((m) => ({ ...m, channel: channel.id })), false);
  renderComposer(channel);
}

function renderChannelTools(header, channel) {
  header.appendChild(node("div", { class: "topic" }, mrkdwn(channel.topic || "", blockContext("message"))));
  const pins = node("button", {
    class: `header-button ${S.panel === "pins" ? "active" : ""}`, type: "button", "data-testid": "pins-toggle",
  }, `Pinned · ${channel.pins.length}`);
  pins.addEventListener("click", () => { S.panel = S.panel === "pins" ? "" : "pins"; render(); });
  header.appendChild(pins);
  header.appendChild(node("span", { class: "header-button", title: channel.members.map(userName).join(", ") },
    `Members · ${channel.members.length}`));
}

function renderComposer(channel) {
  $("composer-form").hidden = false;
  const canPost = channel.is_member && !channel.is_archived;
  $("join").hidden = canPost || channel.is_archived || channel.is_private;
  $("join-text").textContent = `You are not a member of #${channel.name}.`;
  $("composer-box").hidden = !canPost;
  const composer = $("composer");
  composer.placeholder = channel.is_im
    ? `Message ${S.data.app.name}`
    : `Message #${channel.name} — or type ${S.data.commands[0] || "/command"} …`;
  $("composer-hint").textContent = channel.is_archived ? "This channel is archived." :
    `Enter sends · Shift+Enter for a new line · commands: ${S.data.commands.join(", ")}`;
}

function openHome() {
  S.view = "home";
  S.panel = "";
  render();
  act({ action: "home" });
}

function appHeader(header, active) {
  header.appendChild(node("h1", { class: "app-title" },
    `<span class="avatar app app-chip">${APP_ICON}</span>${esc(S.data.app.name)}`));
  const tabs = node("div", { class: "tabs" });
  for (const [key, label] of [["home", "Home"], ["messages", "Messages"]]) {
    const tab = node("button", {
      class: `header-button ${active === key ? "active" : ""}`, type: "button", "data-testid": `app-tab-${key}`,
    }, label);
    tab.addEventListener("click", () => {
      if (key === "home") { openHome(); return; }
      const dm = S.data.channels.find((c) => c.is_im);
      if (dm) openChannel(dm.id);
    });
    tabs.appendChild(tab);
  }
  header.appendChild(tabs);
  header.appendChild(node("div", { class: "topic" }, ""));
}

function renderHome() {
  $("messages").hidden = true;
  const home = $("home");
  home.hidden = false;
  const header = $("main-header");
  header.innerHTML = "";
  appHeader(header, "home");
  const view = S.data.home;
  const key = view ? `${view.id}:${view.hash}` : "none";
  if (home.dataset.key === key) return;
  home.dataset.key = key;
  home.innerHTML = "";
  if (!view) {
    home.appendChild(node("div", { class: "empty" }, `${esc(S.data.app.name)} has not published a Home tab for you yet.`));
  } else {
    const ctx = blockContext("home", {
      values: view.state && view.state.values,
      onAction: ({ element, blockId, value }) => act({
        action: "view_click", view_id: view.id, action_id: element.action_id, block_id: blockId,
        value, inputs: collectInputs(home),
      }),
    });
    home.appendChild(renderBlocks(view.blocks, ctx));
  }
  $("composer-form").hidden = true;
}

function renderPanel() {
  const panel = $("panel");
  const channel = S.data.channel;
  if (S.view === "home" || !channel || !S.panel) { panel.hidden = true; panel.innerHTML = ""; return; }
  panel.hidden = false;
  panel.innerHTML = "";
  if (S.panel === "pins") {
    panel.setAttribute("data-testid", "pins");
    const header = node("header", {}, `<h2>📌 Pinned in #${esc(channel.name)}</h2>`);
    header.appendChild(closeButton());
    panel.appendChild(header);
    const body = node("div", { class: "panel-body" });
    const pinned = channel.messages.filter((m) => channel.pins.includes(m.ts));
    renderMessages(body, pinned.map((m) => ({ ...m, channel: channel.id })), true);
    panel.appendChild(body);
    return;
  }
  panel.setAttribute("data-testid", "thread");
  const parent = channel.messages.find((m) => m.ts === S.thread);
  const header = node("header", {}, `<h2>Thread <small style="font-weight:400;color:#616061">#${esc(channel.name)}</small></h2>`);
  header.appendChild(closeButton());
  panel.appendChild(header);
  const body = node("div", { class: "panel-body" });
  if (!parent) {
    body.appendChild(node("div", { class: "empty" }, "This thread is not in this channel."));
    panel.appendChild(body);
    return;
  }
  const replies = channel.messages.filter((m) => m.thread_ts === S.thread && m.ts !== S.thread);
  const list = [parent, ...replies].map((m) => ({ ...m, channel: channel.id, reply_count: 0 }));
  const saved = body.scrollTop;
  renderMessages(body, list, true);
  if (replies.length) {
    const rule = node("div", { class: "replies-rule" }, `${replies.length} ${replies.length === 1 ? "reply" : "replies"}`);
    body.insertBefore(rule, body.children[1] || null);
  }
  body.scrollTop = saved || body.scrollHeight;
  panel.appendChild(body);
  if (channel.is_member) {
    const form = node("form", { class: "composer" });
    const box = node("div", { class: "composer-box" });
    const input = node("textarea", { rows: 1, placeholder: "Reply…", "data-testid": "thread-composer" });
    box.appendChild(input);
    box.appendChild(node("button", { class: "button primary", type: "submit", "data-testid": "thread-send" }, "Reply"));
    form.appendChild(box);
    const send = () => {
      const text = input.value.trim();
      if (!text) return;
      input.value = "";
      act({ action: "message", channel: channel.id, text, thread_ts: S.thread });
    };
    form.addEventListener("submit", (event) => { event.preventDefault(); send(); });
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); send(); }
    });
    panel.appendChild(form);
  }
}

function closeButton() {
  const button = node("button", { class: "close-x", type: "button", "data-testid": "panel-close", title: "Close" }, "×");
  button.addEventListener("click", () => { S.panel = ""; S.thread = ""; render(); });
  return button;
}

function renderModal() {
  const overlay = $("modal-overlay");
  const view = S.data.modal;
  if (!view) { overlay.hidden = true; overlay.innerHTML = ""; S.modalKey = ""; return; }
  const key = `${view.id}:${view.hash}:${JSON.stringify(view.errors || {})}`;
  if (key === S.modalKey) return;
  S.modalKey = key;
  overlay.hidden = false;
  overlay.innerHTML = "";
  const modal = node("div", {
    class: "modal", role: "dialog", "data-testid": "modal", "data-view-id": view.id,
    "data-callback-id": view.callback_id,
  });
  const header = node("header", {});
  header.appendChild(node("div", { class: "avatar app app-chip" }, APP_ICON));
  header.appendChild(node("h2", { "data-testid": "modal-title" }, textObject(view.title, blockContext("modal"))));
  modal.appendChild(header);
  const body = node("div", { class: "modal-body" });
  const ctx = blockContext("modal", {
    values: view.state && view.state.values,
    errors: view.errors,
    onAction: ({ element, blockId, value }) => act({
      action: "view_click", view_id: view.id, action_id: element.action_id, block_id: blockId,
      value, inputs: collectInputs(body),
    }),
  });
  body.appendChild(renderBlocks(view.blocks, ctx));
  modal.appendChild(body);
  const footer = node("footer", {});
  const cancel = node("button", { class: "button", type: "button", "data-testid": "modal-cancel" },
    esc(view.close ? view.close.text : (view.depth > 1 ? "Back" : "Cancel")));
  cancel.addEventListener("click", () => act({ action: "close", view_id: view.id }));
  footer.appendChild(cancel);
  if (view.submit) {
    const submit = node("button", { class: "button primary", type: "button", "data-testid": "modal-submit" },
      esc(view.submit.text));
    submit.addEventListener("click", async () => {
      submit.disabled = true;
      const result = await act({ action: "submit", view_id: view.id, inputs: collectInputs(body) });
      submit.disabled = false;
      if (!result.ok && result.errors) showInputErrors(body, result.errors);
    });
    footer.appendChild(submit);
  }
  modal.appendChild(footer);
  overlay.appendChild(modal);
}

function showInputErrors(body, errors) {
  for (const old of body.querySelectorAll(".input-error")) old.remove();
  for (const [blockId, message] of Object.entries(errors)) {
    const block = body.querySelector(`.block.input[data-block-id="${CSS.escape(blockId)}"]`);
    if (block) block.appendChild(node("div", { class: "input-error", "data-testid": "input-error" }, esc(message)));
  }
}

function showConfirm(confirm, onYes) {
  const overlay = $("confirm-overlay");
  overlay.innerHTML = "";
  const ctx = blockContext("message");
  const dialog = node("div", { class: "dialog", role: "alertdialog", "data-testid": "confirm-dialog" });
  dialog.appendChild(node("h2", {}, textObject(confirm.title, ctx) || "Are you sure?"));
  dialog.appendChild(node("div", { class: "dialog-text" }, textObject(confirm.text, ctx)));
  const buttons = node("div", { class: "dialog-buttons" });
  const no = node("button", { class: "button", type: "button", "data-testid": "confirm-deny" },
    textObject(confirm.deny, ctx) || "Cancel");
  const yes = node("button", {
    class: `button ${confirm.style === "danger" ? "danger" : "primary"}`, type: "button", "data-testid": "confirm-ok",
  }, textObject(confirm.confirm, ctx) || "Yes");
  no.addEventListener("click", () => { overlay.hidden = true; });
  yes.addEventListener("click", () => { overlay.hidden = true; onYes(); });
  buttons.appendChild(no);
  buttons.appendChild(yes);
  dialog.appendChild(buttons);
  overlay.appendChild(dialog);
  overlay.hidden = false;
}

// A direct message from the app (e.g. a refusal Slack could not show as an ephemeral message
// because the person is not in the channel) is announced, as Slack notifies a DM.
function renderDirect() {
  const direct = S.data.direct;
  if (!direct) return;
  const seen = S.directSeen[S.user];
  S.directSeen[S.user] = direct.count;
  if (seen === undefined || direct.count <= seen) return;
  const viewing = S.view === "channel" && S.channel === direct.id;
  if (!viewing) toast(`${S.data.app.name} (direct message): ${direct.latest}`, "direct");
}

function renderNotices() {
  const notices = S.data.notices || [];
  const seen = S.noticesSeen[S.user];
  if (seen === undefined) { S.noticesSeen[S.user] = notices.length; return; }
  for (const text of notices.slice(seen)) toast(text, "error");
  S.noticesSeen[S.user] = notices.length;
}

// ----------------------------------------------------------------------------- navigation

function openChannel(id) {
  S.view = "channel";
  S.channel = id;
  S.thread = "";
  if (S.panel === "thread") S.panel = "";
  refresh();
}

function openThread(ts) {
  S.thread = ts;
  S.panel = "thread";
  render();
}

$("user-picker").addEventListener("change", (event) => {
  S.user = event.target.value;
  S.modalKey = "";
  $("home").dataset.key = "";
  refresh();
  if (S.view === "home") act({ action: "home" });
});

$("join-button").addEventListener("click", () => act({ action: "join", channel: S.channel }));

function sendComposer() {
  const composer = $("composer");
  const text = composer.value.trim();
  if (!text) return;
  composer.value = "";
  if (text.startsWith("/")) {
    const [command, ...rest] = text.split(/\s+/);
    act({ action: "command", channel: S.channel, command, text: rest.join(" ") });
  } else {
    act({ action: "message", channel: S.channel, text });
  }
}

$("composer-form").addEventListener("submit", (event) => { event.preventDefault(); sendComposer(); });
$("composer").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); sendComposer(); }
});
window.addEventListener("hashchange", () => { readHash(); refresh(); });
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") $("confirm-overlay").hidden = true;
});

// A reload is a fresh client: no modal is left open (as in Slack).
refresh().then(() => {
  act({ action: "reload" });
  if (S.view === "home") act({ action: "home" });
});
connectLive();
