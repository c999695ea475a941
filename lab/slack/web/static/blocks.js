// Block Kit and mrkdwn rendering for the local Slack workspace page.
// Plain DOM, no dependencies. Everything the app sent is escaped before it reaches
// innerHTML; only the markup produced here is trusted.
(() => {
"use strict";

// The emoji this workspace knows: served from lab/slack/emoji.py as /static/emoji.js.
const EMOJI = window.SLACK_EMOJI || {};

function esc(text) {
  return String(text == null ? "" : text)
    .replace(/&(?!(amp|lt|gt|quot|#39);)/g, "&amp;")
    .replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function emoji(html) {
  return html.replace(/:([a-z0-9_+\-']+):/g, (all, name) => EMOJI[name] || all);
}

function safeUrl(url) {
  return /^(https?:|mailto:|\/)/i.test(url) ? url : "#";
}

// Slack's angle-bracket tokens: <@U123>, <#C123|name>, <!here>, <!subteam^S1|@x>, <url|text>
function token(body, ctx) {
  const [target, label] = splitOnce(body, "|");
  if (target.startsWith("@")) {
    const id = target.slice(1);
    return `<span class="mention" data-user="${esc(id)}">@${esc(label || ctx.userName(id))}</span>`;
  }
  if (target.startsWith("#")) {
    const id = target.slice(1);
    return `<span class="mention channel">#${esc(label || ctx.channelName(id))}</span>`;
  }
  if (target.startsWith("!subteam^")) {
    const id = target.slice(9);
    return `<span class="mention">${esc(label || "@" + ctx.groupHandle(id))}</span>`;
  }
  if (target.startsWith("!date^")) {
    return esc(label || target);
  }
  if (target.startsWith("!")) {
    return `<span class="mention">@${esc(target.slice(1))}</span>`;
  }
  return `<a href="${esc(safeUrl(target))}" target="_blank" rel="noopener">${esc(label || target)}</a>`;
}

function splitOnce(text, sep) {
  const at = text.indexOf(sep);
  return at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at + 1)];
}

function inline(text, ctx) {
  // Code spans and <tokens> are held aside as placeholders first, so nothing inside them is
  // formatted while formatting can still wrap them, as Slack does: *Transaction `tx-1`* is
  // bold around the code.
  const held = [];
  const hold = (html) => `\u0000${held.push(html) - 1}\u0000`;
  let src = String(text).replace(/`([^`\n]+)`/g, (all, code) => hold(`<code>${esc(code)}</code>`));
  src = src.replace(/<([^<>\n]+)>/g, (all, body) => hold(token(body, ctx)));
  let html = esc(src)
    .replace(/(^|[\s(\[>])\*(?!\s)([^*\n]+?)\*(?=$|[\s).,!?:;\]<])/g, "$1<b>$2</b>")
    .replace(/(^|[\s(\[>])_(?!\s)([^_\n]+?)_(?=$|[\s).,!?:;\]<])/g, "$1<i>$2</i>")
    .replace(/(^|[\s(\[>])~(?!\s)([^~\n]+?)~(?=$|[\s).,!?:;\]<])/g, "$1<s>$2</s>");
  html = emoji(html);
  return html.replace(/\u0000(\d+)\u0000/g, (all, i) => held[Number(i)]);
}

function mrkdwn(text, ctx) {
  const chunks = String(text || "").split(/```/);
  return chunks.map((chunk, i) => {
    if (i % 2 === 1) return `<pre>${esc(chunk.replace(/^\n/, ""))}</pre>`;
    const lines = chunk.split("\n");
    let html = "";
    let quote = [];
    const flush = () => {
      if (quote.length) html += `<blockquote>${quote.join("<br>")}</blockquote>`;
      quote = [];
    };
    lines.forEach((line, n) => {
      if (/^(&gt;|>)\s?/.test(line)) { quote.push(inline(line.replace(/^(&gt;|>)\s?/, ""), ctx)); return; }
      flush();
      html += inline(line, ctx) + (n < lines.length - 1 ? "<br>" : "");
    });
    flush();
    return html;
  }).join("");
}

function textObject(obj, ctx) {
  if (!obj) return "";
  if (obj.type === "mrkdwn") return mrkdwn(obj.text, ctx);
  return obj.emoji === false ? esc(obj.text) : emoji(esc(obj.text));
}

function el(tag, attrs, html) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    node.setAttribute(key, value === true ? "" : String(value));
  }
  if (html !== undefined) node.innerHTML = html;
  return node;
}

// ----------------------------------------------------------------------------- elements

function optionsOf(element) {
  if (element.option_groups) return element.option_groups.flatMap((g) => g.options || []);
  return element.options || [];
}

function selectBox(element, ctx, choices, initial, multiple) {
  const select = el("select", { "data-action-id": element.action_id, multiple, class: "select" });
  if (!multiple) {
    const placeholder = element.placeholder ? element.placeholder.text : "Select…";
    select.appendChild(el("option", { value: "" }, esc(placeholder)));
  }
  for (const [value, label] of choices) {
    const selected = Array.isArray(initial) ? initial.includes(value) : initial === value;
    select.appendChild(el("option", { value, selected }, label));
  }
  return select;
}

function initialOf(element) {
  if (element.initial_option) return element.initial_option.value;
  if (element.initial_options) return element.initial_options.map((o) => o.value);
  for (const key of ["initial_value", "initial_user", "initial_conversation", "initial_channel",
    "initial_date", "initial_time"]) {
    if (element[key] !== undefined) return element[key];
  }
  for (const key of ["initial_users", "initial_conversations", "initial_channels"]) {
    if (element[key] !== undefined) return element[key];
  }
  return null;
}

// The saved input of a modal (its view.state.values entry) as a plain value.
function savedInput(saved) {
  if (!saved) return undefined;
  if ("value" in saved) return saved.value;
  if ("selected_option" in saved) return saved.selected_option ? saved.selected_option.value : null;
  if ("selected_options" in saved) return saved.selected_options.map((o) => o.value);
  for (const key of ["selected_user", "selected_conversation", "selected_channel", "selected_date",
    "selected_time", "selected_users", "selected_conversations", "selected_channels"]) {
    if (key in saved) return saved[key];
  }
  return undefined;
}

function renderInputElement(element, ctx, blockId) {
  const saved = savedInput(ctx.values && ctx.values[blockId] && ctx.values[blockId][element.action_id]);
  const initial = saved !== undefined ? saved : initialOf(element);
  const kind = element.type;
  const wrap = el("div", {
    class: `input-element ${kind}`,
    "data-element-type": kind,
    "data-block-id": blockId,
    "data-action-id": element.action_id,
    "data-testid": `input-${element.action_id}`,
  });
  if (kind === "plain_text_input" || kind === "email_text_input" || kind === "url_text_input" ||
      kind === "number_input") {
    const type = { email_text_input: "email", url_text_input: "url", number_input: "number" }[kind];
    const field = element.multiline
      ? el("textarea", { rows: 4 })
      : el("input", { type: type || "text" });
    if (element.placeholder) field.setAttribute("placeholder", element.placeholder.text);
    if (element.max_length) field.setAttribute("maxlength", element.max_length);
    if (initial != null) field.value = initial;
    wrap.appendChild(field);
  } else if (kind === "static_select" || kind === "multi_static_select") {
    const choices = optionsOf(element).map((o) => [o.value, textObject(o.text, ctx)]);
    wrap.appendChild(selectBox(element, ctx, choices, initial, kind.startsWith("multi_")));
  } else if (kind.endsWith("users_select")) {
    const choices = ctx.people().map((u) => [u.id, esc(u.real_name || u.name)]);
    wrap.appendChild(selectBox(element, ctx, choices, initial, kind.startsWith("multi_")));
  } else if (kind.endsWith("conversations_select") || kind.endsWith("channels_select")) {
    const choices = ctx.channels().map((c) => [c.id, "#" + esc(c.name)]);
    wrap.appendChild(selectBox(element, ctx, choices, initial, kind.startsWith("multi_")));
  } else if (kind === "radio_buttons" || kind === "checkboxes") {
    const name = `${blockId}-${element.action_id}-${Math.random().toString(36).slice(2, 7)}`;
    for (const option of element.options || []) {
      const chosen = Array.isArray(initial) ? initial.includes(option.value) : initial === option.value;
      const label = el("label", { class: "choice" });
      const box = el("input", {
        type: kind === "radio_buttons" ? "radio" : "checkbox", name, value: option.value, checked: chosen,
      });
      label.appendChild(box);
      label.appendChild(el("span", {}, textObject(option.text, ctx) +
        (option.description ? `<small>${textObject(option.description, ctx)}</small>` : "")));
      wrap.appendChild(label);
    }
  } else if (kind === "datepicker" || kind === "timepicker") {
    const field = el("input", { type: kind === "datepicker" ? "date" : "time" });
    if (initial != null) field.value = initial;
    wrap.appendChild(field);
  } else {
    wrap.appendChild(el("span", { class: "unsupported" }, `(${esc(kind)} is not shown here)`));
  }
  return wrap;
}

// Read what the user entered into one input element (see renderInputElement).
function readInput(wrap) {
  const kind = wrap.dataset.elementType;
  if (kind === "radio_buttons") {
    const checked = wrap.querySelector("input:checked");
    return checked ? checked.value : null;
  }
  if (kind === "checkboxes") {
    return [...wrap.querySelectorAll("input:checked")].map((box) => box.value);
  }
  const select = wrap.querySelector("select");
  if (select) {
    if (select.multiple) return [...select.selectedOptions].map((o) => o.value);
    return select.value === "" ? null : select.value;
  }
  const field = wrap.querySelector("input, textarea");
  if (!field) return null;
  return field.value === "" ? null : field.value;
}

function collectInputs(root) {
  const inputs = {};
  for (const wrap of root.querySelectorAll(".input-element[data-action-id]")) {
    const block = wrap.dataset.blockId;
    inputs[block] = inputs[block] || {};
    inputs[block][wrap.dataset.actionId] = readInput(wrap);
  }
  return inputs;
}

function renderButton(element, ctx, blockId) {
  const classes = ["button"];
  if (element.style) classes.push(element.style);
  const button = el("button", {
    class: classes.join(" "),
    type: "button",
    "data-testid": `button-${element.action_id}`,
    "data-action-id": element.action_id,
    "data-block-id": blockId,
    "data-value": element.value,
  }, textObject(element.text, ctx));
  button.addEventListener("click", () => {
    if (element.url) window.open(safeUrl(element.url), "_blank", "noopener");
    const send = () => ctx.onAction({ element, blockId, value: element.value === undefined ? null : element.value });
    if (element.confirm) ctx.confirm(element.confirm, send); else send();
  });
  return button;
}

function renderActionElement(element, ctx, blockId) {
  const kind = element.type;
  if (kind === "button") return renderButton(element, ctx, blockId);
  if (kind === "overflow") {
    const choices = (element.options || []).map((o) => [o.value, textObject(o.text, ctx)]);
    const select = selectBox({ ...element, placeholder: { text: "⋯" } }, ctx, choices, null, false);
    select.classList.add("overflow");
    select.setAttribute("data-testid", `overflow-${element.action_id}`);
    select.addEventListener("change", () => {
      if (select.value) ctx.onAction({ element, blockId, value: select.value });
    });
    return select;
  }
  if (kind === "image") {
    return el("img", { class: "accessory-image", src: element.image_url, alt: element.alt_text });
  }
  if (ctx.mode === "modal" || ctx.mode === "home") {
    const wrap = renderInputElement(element, ctx, blockId);
    if (element.type !== "plain_text_input") {
      wrap.addEventListener("change", () => ctx.onAction({ element, blockId, value: readInput(wrap) }));
    }
    return wrap;
  }
  const wrap = renderInputElement(element, ctx, blockId);
  wrap.addEventListener("change", () => ctx.onAction({ element, blockId, value: readInput(wrap) }));
  return wrap;
}

// ----------------------------------------------------------------------------- blocks

function renderRichText(block, ctx) {
  const out = [];
  const style = (text, s) => {
    let html = esc(text);
    if (!s) return html;
    if (s.code) html = `<code>${html}</code>`;
    if (s.bold) html = `<b>${html}</b>`;
    if (s.italic) html = `<i>${html}</i>`;
    if (s.strike) html = `<s>${html}</s>`;
    return html;
  };
  const walk = (elements) => (elements || []).map((item) => {
    switch (item.type) {
      case "text": return style(item.text, item.style).replace(/\n/g, "<br>");
      case "link": return `<a href="${esc(safeUrl(item.url))}" target="_blank" rel="noopener">${esc(item.text || item.url)}</a>`;
      case "user": return `<span class="mention">@${esc(ctx.userName(item.user_id))}</span>`;
      case "channel": return `<span class="mention channel">#${esc(ctx.channelName(item.channel_id))}</span>`;
      case "emoji": return EMOJI[item.name] || `:${esc(item.name)}:`;
      default: return esc(item.text || "");
    }
  }).join("");
  for (const section of block.elements || []) {
    if (section.type === "rich_text_preformatted") out.push(`<pre>${walk(section.elements)}</pre>`);
    else if (section.type === "rich_text_quote") out.push(`<blockquote>${walk(section.elements)}</blockquote>`);
    else if (section.type === "rich_text_list") {
      const tag = section.style === "ordered" ? "ol" : "ul";
      out.push(`<${tag}>${(section.elements || []).map((s) => `<li>${walk(s.elements)}</li>`).join("")}</${tag}>`);
    } else out.push(`<div>${walk(section.elements)}</div>`);
  }
  return el("div", { class: "block rich-text" }, out.join(""));
}

function renderBlock(block, ctx) {
  const blockId = block.block_id || "";
  const attrs = (type) => ({ class: `block ${type}`, "data-block-id": blockId, "data-testid": `block-${type}` });
  switch (block.type) {
    case "section": {
      const node = el("div", attrs("section"));
      const body = el("div", { class: "section-body" });
      if (block.text) body.appendChild(el("div", { class: "section-text" }, textObject(block.text, ctx)));
      if (block.fields) {
        const grid = el("div", { class: "fields" });
        for (const field of block.fields) grid.appendChild(el("div", { class: "field" }, textObject(field, ctx)));
        body.appendChild(grid);
      }
      node.appendChild(body);
      if (block.accessory) {
        const accessory = el("div", { class: "accessory" });
        accessory.appendChild(renderActionElement(block.accessory, ctx, blockId));
        node.appendChild(accessory);
      }
      return node;
    }
    case "header":
      return el("h3", attrs("header"), textObject(block.text, ctx));
    case "divider":
      return el("hr", attrs("divider"));
    case "context": {
      const node = el("div", attrs("context"));
      for (const item of block.elements || []) {
        if (item.type === "image") node.appendChild(el("img", { src: item.image_url, alt: item.alt_text }));
        else node.appendChild(el("span", {}, textObject(item, ctx)));
      }
      return node;
    }
    case "image": {
      const node = el("figure", attrs("image"));
      if (block.title) node.appendChild(el("figcaption", {}, textObject(block.title, ctx)));
      const src = block.image_url || (block.slack_file && block.slack_file.url) || "";
      node.appendChild(el("img", { src, alt: block.alt_text }));
      return node;
    }
    case "actions": {
      const node = el("div", attrs("actions"));
      for (const element of block.elements || []) node.appendChild(renderActionElement(element, ctx, blockId));
      return node;
    }
    case "input": {
      const node = el("div", attrs("input"));
      const required = block.optional ? "" : ' <span class="required" title="required">*</span>';
      node.appendChild(el("label", { class: "input-label" }, textObject(block.label, ctx) + required));
      const element = renderInputElement(block.element, ctx, blockId);
      if (block.dispatch_action) {
        element.addEventListener("change", () => ctx.onAction({ element: block.element, blockId, value: readInput(element) }));
      }
      node.appendChild(element);
      if (block.hint) node.appendChild(el("div", { class: "hint" }, textObject(block.hint, ctx)));
      const error = ctx.errors && ctx.errors[blockId];
      if (error) node.appendChild(el("div", { class: "input-error", "data-testid": "input-error" }, esc(error)));
      return node;
    }
    case "rich_text":
      return renderRichText(block, ctx);
    case "markdown":
      return el("div", attrs("markdown"), mrkdwn(block.text, ctx));
    default:
      return el("div", { class: "block unsupported" }, `(${esc(block.type)} block)`);
  }
}

function renderBlocks(blocks, ctx) {
  const root = el("div", { class: "blocks" });
  for (const block of blocks || []) root.appendChild(renderBlock(block, ctx));
  return root;
}

window.BlockKit = { renderBlocks, mrkdwn, textObject, collectInputs, esc, emoji };
})();
