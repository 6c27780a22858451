// DOM builders. Everything the model or a person wrote goes in through textContent, never as HTML,
// and through reveal(), so characters that hide or reorder text are shown escaped and flagged.
import { reveal } from "./visible.js";
import { previewBlock, whyBlock } from "./preview.js";
import { undoable } from "./undo.js";
import { suppliedFields, suppliedText } from "./supplied.js";

export const STATUS_LABELS = {
  awaiting_approval: "awaiting approval",
  running: "running",
  idle: "idle",
  failed: "failed",
  closed: "closed",
};

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// An element showing untrusted text; flagged (data-hidden-characters) when it held hidden characters.
export function shownEl(tag, className, value, multiline = false) {
  const shown = reveal(value, multiline);
  const node = el(tag, className, shown.text);
  if (shown.hidden) node.dataset.hiddenCharacters = "true";
  return node;
}

export const HIDDEN_FLAG_TEXT =
  "Contains hidden characters: they are shown escaped (like \\u202e). What runs is exactly the text as written.";

function hiddenFlag() {
  const flag = el("p", "hidden-flag", HIDDEN_FLAG_TEXT);
  flag.setAttribute("role", "alert");
  return flag;
}

function flagIfHidden(container, before) {
  if (!container.querySelector("[data-hidden-characters]")) return;
  container.dataset.hiddenCharacters = "true";
  container.insertBefore(hiddenFlag(), before);
}

const LONG_LINES = 40;
const LONG_CHARS = 4000;

// Arguments in full; long ones start folded, with a button that says how much is not in view.
export function argumentsBlock(value) {
  const block = el("div", "arguments-block");
  const pre = shownEl("pre", "arguments", prettyArguments(value), true);
  block.append(pre);
  const text = pre.textContent;
  const lines = text.split("\n").length;
  if (lines > LONG_LINES || text.length > LONG_CHARS) {
    pre.classList.add("collapsed");
    const more = el("button", "show-more", `Partly shown: show all ${lines} lines (${text.length} characters)`);
    more.type = "button";
    more.addEventListener("click", () => {
      pre.classList.remove("collapsed");
      more.remove();
    });
    block.append(more);
  }
  return block;
}

export function conversationHref(id) {
  return "#/conversations/" + encodeURIComponent(id);
}

function statusLabel(status) {
  return STATUS_LABELS[status] || String(status);
}

export function dot(status, count) {
  const node = el("span", "dot dot-" + (STATUS_LABELS[status] ? status : "unknown"));
  const label = status === "awaiting_approval" ? `${statusLabel(status)} (${count})` : statusLabel(status);
  node.title = label;
  node.setAttribute("aria-label", label);
  node.setAttribute("role", "img");
  return node;
}

// A tool of the conversation waits for a host no worker polls: said beside the status, never silent
// (the orange dot and count stay for approvals). The text is the server's (core/host_wait.py).
export function hostWaitBadge(text) {
  const badge = el("span", "host-wait-badge", "host gone");
  const label = reveal(text || "waiting for a host no worker polls").text;
  badge.title = label;
  badge.setAttribute("aria-label", label);
  return badge;
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const seconds = Math.round((date.getTime() - Date.now()) / 1000);
  const units = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
  const [unit, size] = units.find(([, s]) => Math.abs(seconds) >= s) || ["second", 1];
  const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" }).format(Math.round(seconds / size), unit);
  return `${relative} (${date.toLocaleString()})`;
}

function timeNode(iso) {
  const node = el("time", null, when(iso));
  if (iso) node.dateTime = iso;
  return node;
}

// What the pre-screen said before a person was asked (its model and reason are shown as text).
export function prescreenLine(said) {
  const line = el("p", "card-prescreen", "Pre-screen ");
  line.append(shownEl("span", "prescreen-model", said.model), el("span", "", ` said ${said.verdict}: `));
  line.append(shownEl("span", "prescreen-reason", said.error ? `${said.reason} (${said.error})` : said.reason));
  return line;
}

export function conversationItem(conv, selectedId, depth = 0) {
  const item = el("li", "conversation");
  item.dataset.conversationId = conv.conversation_id;
  if (conv.parent_id) {
    item.classList.add("subagent");
    item.dataset.parentId = conv.parent_id;
    item.style.setProperty("--depth", String(depth));
  }
  item.dataset.status = conv.turn_status;
  if (conv.conversation_id === selectedId) item.classList.add("selected");
  const link = el("a", "conversation-link");
  link.href = conversationHref(conv.conversation_id);
  link.append(dot(conv.turn_status, conv.pending_count));
  link.append(shownEl("span", "conversation-id", conv.conversation_id));
  if (conv.turn_status === "awaiting_approval") link.append(el("span", "count-badge", conv.pending_count));
  else if (conv.host_wait) link.append(hostWaitBadge(conv.host_wait_text));
  const meta = el("span", "conversation-meta", `${statusLabel(conv.turn_status)} · ${when(conv.updated_at)}`);
  if (conv.host_wait) meta.append(shownEl("span", "host-wait-note", ` · ${conv.host_wait_text}`));
  if (conv.parent_id) meta.append(shownEl("span", "subagent-of", ` · subagent of ${conv.parent_id}`));
  link.append(meta);
  item.append(link);
  return item;
}

export function prettyArguments(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

const DECISION_WORDS = {
  allow: "Allowed",
  always_allow: "Always allowed",
  deny: "Denied",
  expired: "Expired",
  canceled: "Canceled",
  edit: "Approved with edited arguments",
  stale: "Stale (the target changed before it ran; asked again)",
};

function outcomeText(approval) {
  if (approval.status === "resolved") {
    const word = DECISION_WORDS[approval.decision] || String(approval.decision);
    const reason = approval.reason ? ` Reason: ${approval.reason}` : "";
    const via = approval.decided_via ? ` via ${approval.decided_via}` : "";
    const bound = approval.decided_args_hash ? ` on arguments ${approval.decided_args_hash}` : "";
    const ran = approval.outcome ? ` Outcome: ${approval.outcome}.` : "";
    const again = approval.reasked_as ? ` Asked again as ${approval.reasked_as}.` : "";
    const given = approval.supplied && Object.keys(approval.supplied).length ? ` ${suppliedText(approval.supplied)}.` : "";
    return `${word} by ${approval.decided_by || "unknown"}${via}${bound}, ${when(approval.resolved_at)}.${given}${ran}${again}${reason}`;
  }
  const word = DECISION_WORDS[approval.claimed_decision] || String(approval.claimed_decision);
  const by = approval.claimed_by || "unknown";
  return `${word} by ${by}, ${when(approval.claimed_at)}: sent, waiting for the workflow to record it.`;
}

const HINT_WORDS = { readOnlyHint: "read-only", destructiveHint: "destructive", idempotentHint: "idempotent", openWorldHint: "open-world" };

// Where the tool comes from, the hints its server gave (shown, never trusted to loosen a rule),
// and a warning when it changed since it was always-allowed.
const SOURCE_WORDS = {
  builtin: () => "Built-in tool",
  python: (tool) => `Python tool from ${tool.origin}`,
  mcp: (tool) => `MCP server ${tool.origin}`,
  subagent: (tool) => `Subagent ${tool.origin}`,
  external: (tool) => `Asked by ${tool.origin}`,
};

function toolOrigin(tool, requesterUrl) {
  const source = tool.source || "builtin";
  const origin = el("p", "card-origin tool-source-" + source, (SOURCE_WORDS[source] || SOURCE_WORDS.mcp)(tool));
  if (source === "external") {
    // Another workflow's request: its reason, in its own words, and a link to that workflow.
    const card = tool.annotations || {};
    if (card.title) origin.append(el("span", "", " · "), shownEl("span", "request-title", card.title));
    if (card.context) origin.append(el("span", "", " · why: "), shownEl("span", "request-context", card.context));
    if (requesterUrl) {
      origin.append(el("span", "", " · "));
      const link = shownEl("a", "requester-link", `workflow ${card.requester.workflow_id}`);
      link.href = requesterUrl;
      link.target = "_blank";
      link.rel = "noopener";
      origin.append(link);
    }
    return origin;
  }
  const hints = Object.entries(tool.annotations || {}).filter(([key, value]) => value === true && HINT_WORDS[key]);
  if (hints.length) origin.append(el("span", "hints", " · server says: " + hints.map(([key]) => HINT_WORDS[key]).join(", ")));
  if (tool.changed) origin.append(el("strong", "tool-changed", " · changed since it was always allowed: asked again"));
  return origin;
}

// onDecide(approval, decision, reason, buttons) is called by the buttons of a pending card.
// Mirrors workflows/approvers.py may_decide: the server and the workflow check it again.
function mayDecide(approvers, principal, notBy) {
  if (notBy && principal && principal.name === notBy) return false;
  if (!approvers) return true;
  if (!principal) return false;
  return approvers.includes(principal.name) || principal.groups.some((g) => approvers.includes("group:" + g));
}

export function approvalCard(approval, { showConversation, onDecide, selection, principal, editor, extender, undoer, granter }) {
  const card = el("article", "card approval approval-" + approval.status);
  card.dataset.requestId = approval.request_id;
  card.dataset.status = approval.status;
  const head = el("header", "card-head");
  head.append(shownEl("span", "tool-name", approval.tool_name));
  head.append(el("span", "permission permission-" + approval.permission_type, approval.permission_type));
  head.append(el("span", "card-status", approval.status === "pending" ? "waiting" : approval.status));
  card.append(head);
  card.append(toolOrigin(approval.tool || {}, approval.requester_url));
  if (showConversation || approval.parent_id) {
    const where = el("p", "card-conversation", approval.parent_id ? "Subagent conversation " : "Conversation ");
    const link = shownEl("a", null, approval.conversation_id);
    link.href = conversationHref(approval.conversation_id);
    where.append(link);
    if (approval.parent_id) {
      const parent = shownEl("a", "card-parent", approval.parent_id);
      parent.href = conversationHref(approval.parent_id);
      where.append(", working for ", parent);
    }
    card.append(where);
  }
  const edited = approval.edited_arguments;
  const label = el("p", "card-label", edited ? "Asked with these arguments:" : "Will run with these arguments:");
  card.append(label, argumentsBlock(approval.arguments));
  flagIfHidden(card, label);
  if (edited) {
    // Both are kept: what the model asked for above, what a person changed it to (and what ran) here.
    const editedLabel = el("p", "card-label card-edited", "Ran with these edited arguments:");
    card.append(editedLabel, argumentsBlock(edited));
    flagIfHidden(card, editedLabel);
  }
  if (approval.prescreen) card.append(prescreenLine(approval.prescreen));
  const why = approval.why && whyBlock(approval.why);
  if (why) card.append(why);
  if (approval.preview) card.append(previewBlock(approval.preview));
  // The decision carries this hash: arguments that changed since the card was drawn are refused.
  const hash = el("p", "card-hash", "Arguments hash ");
  hash.append(el("code", "args-hash", approval.args_hash));
  card.append(hash);
  if (approval.trace_id) {
    // The request's trace (OpenTelemetry): find it in the tracing backend by this id.
    const traced = el("p", "card-trace", "Trace ");
    traced.append(el("code", "trace-id", approval.trace_id));
    card.append(traced);
  }
  const times = el("p", "card-times");
  times.append("Asked ", timeNode(approval.created_at));
  if (approval.expires_at) times.append(el("br"), "Expires ", timeNode(approval.expires_at));
  card.append(times);
  if (approval.status !== "pending") {
    const outcome = "card-outcome outcome-" + (approval.decision || approval.claimed_decision);
    card.append(shownEl("p", outcome, outcomeText(approval), true));
    if (undoer && undoable(approval)) card.append(undoer(approval));
    return card;
  }
  if (extender) card.append(extender(approval));
  if (approval.approvers) card.append(shownEl("p", "card-approvers", `Who may decide: ${approval.approvers.join(", ")}`));
  if (approval.required > 1) {
    const names = approval.approved_by.length ? ` (${approval.approved_by.join(", ")})` : "";
    card.append(shownEl("p", "card-partial", `Approvals: ${approval.approved_by.length} of ${approval.required}${names}`));
  }
  const allowed = mayDecide(approval.approvers, principal, approval.not_by);
  if (!allowed && principal && principal.name === approval.not_by) {
    card.append(shownEl("p", "not-approver", "You started this conversation: someone else must decide this call."));
  } else if (!allowed) {
    const who = principal ? `you are ${principal.name}` : "log in with your own token to decide it";
    card.append(shownEl("p", "not-approver", `Only ${approval.approvers.join(", ")} may decide this call; ${who}.`));
  }
  // Values only a person supplies (supplied.js): asked here, one call at a time (no batch, no always-allow).
  const supplied = approval.supplied_by_approver && approval.supplied_by_approver.length ? suppliedFields(approval, allowed) : null;
  if (selection && allowed && !supplied) card.append(selection(approval));
  const reasonId = "reason-" + approval.request_id;
  const reasonLabel = el("label", "reason-label", "Reason (optional, the model reads it)");
  reasonLabel.htmlFor = reasonId;
  const reason = el("input", "reason");
  reason.id = reasonId;
  reason.maxLength = 2000;
  const actions = el("div", "actions");
  const buttons = [
    ["allow", "Allow", "button-allow primary"],
    ["always_allow", "Always allow for this conversation", "button-always"],
    ["deny", "Deny", "button-deny danger"],
  ].filter(([decision]) => !(supplied && decision === "always_allow")).map(([decision, text, cls]) => {
    const button = el("button", cls, text);
    button.type = "button";
    button.dataset.decision = decision;
    button.disabled = !allowed;
    return button;
  });
  // "And allow calls like this" (grant.js): a grant sent with Allow; never for M-of-N calls.
  const offer = granter && allowed && approval.grant_offer && approval.required <= 1 ? granter(approval) : null;
  for (const button of buttons) {
    const extra = () => ({
      ...(offer && button.dataset.decision === "allow" ? offer.extra() : {}),
      ...(supplied && button.dataset.decision === "allow" ? supplied.extra() : {}),
    });
    button.addEventListener("click", () => onDecide(approval, button.dataset.decision, reason.value, buttons, extra()));
    actions.append(button);
  }
  card.append(reasonLabel, reason);
  if (supplied) card.append(supplied.node);
  if (offer) card.append(offer.node);
  card.append(actions);
  if (editor && approval.required <= 1 && approval.editable !== false) {
    const edit = (args, sent) => onDecide(approval, "edit", reason.value, sent, { arguments: args, ...(supplied ? supplied.extra() : {}) });
    card.append(editor(approval, allowed, edit));
  }
  return card;
}

function messageItem(role, title, extraClass) {
  const item = el("li", `message message-${role}${extraClass ? " " + extraClass : ""}`);
  item.append(shownEl("span", "message-role", title));
  return item;
}

// archived: messages a compaction took out of the model's transcript; they come first, then a
// divider, then the summary the model works from and the current messages.
export function transcriptItems(messages, archived = []) {
  const items = archived.length ? transcriptItems(archived) : [];
  if (archived.length) {
    items.forEach((item) => item.classList.add("message-archived"));
    const divider = el("li", "message compaction-divider",
      `The ${archived.length} message(s) above were compacted: the model now works from the summary below.`);
    items.push(divider);
  }
  for (const message of messages) {
    if (message.role === "system" && message.name === "conversation_summary") {
      const item = messageItem("summary", "Summary for the model");
      item.append(el("p", "message-text", message.content || ""));
      items.push(item);
    } else if (message.role === "system" && message.name === "tools_unavailable") {
      // A tool source failed this turn: the note the model read, with the server's last words.
      const item = messageItem("system", "Tools unavailable", "message-denied");
      item.append(shownEl("p", "message-text", message.content || "", true));
      flagIfHidden(item, item.children[1]);
      items.push(item);
    } else if (message.role === "user") {
      const item = messageItem("user", "You");
      item.append(shownEl("p", "message-text", message.content || "", true));
      flagIfHidden(item, item.children[1]);
      items.push(item);
    } else if (message.role === "assistant") {
      const item = messageItem("assistant", "Assistant");
      if (message.content) item.append(shownEl("p", "message-text", message.content, true));
      for (const call of message.tool_calls || []) {
        const block = el("div", "tool-call");
        block.dataset.toolCallId = call.id;
        block.append(shownEl("span", "tool-call-title", `Tool call: ${call.name}`));
        block.append(argumentsBlock(call.arguments));
        item.append(block);
      }
      flagIfHidden(item, item.children[1]);
      items.push(item);
    } else if (message.role === "tool") {
      const content = message.content || "";
      const denied = content.startsWith("Not run:");
      const title = denied ? `Not run: ${message.name || "tool"}` : `Result of ${message.name || "tool"}`;
      const item = messageItem("tool", title, denied ? "message-denied" : "");
      item.dataset.toolCallId = message.tool_call_id || "";
      item.append(shownEl("pre", "tool-result", content, true));
      flagIfHidden(item, item.children[1]);
      items.push(item);
    }
  }
  return items;
}
