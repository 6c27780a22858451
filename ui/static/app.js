// The inbox: loads state from the API, follows /api/events, and sends decisions and messages.
import { approvalCard, conversationItem, el, transcriptItems, STATUS_LABELS } from "./render.js";
import { reveal } from "./visible.js";
import { auditTable } from "./audit.js";
import { keepWaiting, selectionBox, setupBatch } from "./batch.js";
import { renderControls, setupControls } from "./controls.js";
import { inTreeOrder } from "./tree.js";
import { applyDelta, reattach, resetStream } from "./stream.js";
import { editControls } from "./edit.js";
import { extendControls } from "./extend.js";
import { grantOffer } from "./grant.js";
import { undoControl } from "./undo.js";
import { focusCard, followDeepLink } from "./deeplink.js";
import { questionCard } from "./questions.js";
import { setupPush } from "./push.js";

const $ = (id) => document.getElementById(id);
const PAGE = 50;
const MAX_PAGE = 500;
const view = {
  selectedId: null,
  detailSignature: "",
  detailDirty: false,
  detailLoading: false,
  detailAgain: false,
  refreshTimer: null,
  principal: null,
  linked: null, // the request a deep link named, until its card is shown
  // How many rows each list shows; "Show more" raises it by a page. Lists are keyset pages.
  wanted: { conversations: PAGE, pending: PAGE },
};

async function api(path, options = {}) {
  const init = { credentials: "same-origin", headers: {}, ...options };
  if (options.json !== undefined) {
    init.method = init.method || "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.json);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    window.location.assign("/login");
    throw new Error("log in first");
  }
  const body = await response.json().catch(() => null);
  return { ok: response.ok, status: response.status, body, next: response.headers.get("X-Next-Cursor") };
}

// The first `wanted` rows of a paged listing, page after page; `more` says whether rows remain.
async function loadPaged(path, wanted) {
  const joiner = path.includes("?") ? "&" : "?";
  let rows = [];
  let after = null;
  for (;;) {
    const size = Math.min(MAX_PAGE, wanted - rows.length);
    const cursor = after ? `&after=${encodeURIComponent(after)}` : "";
    const result = await api(`${path}${joiner}limit=${size}${cursor}`);
    if (!result.ok) return null;
    rows = rows.concat(result.body);
    after = result.next;
    if (!after || rows.length >= wanted) return { rows, more: Boolean(after) };
  }
}

function errorMessage(result) {
  return (result.body && result.body.error && result.body.error.message) || `request failed (${result.status})`;
}

function showFatigue(text) {
  const node = $("fatigue-notice");
  node.textContent = text;
  node.hidden = false;
}

let toastTimer = null;
function toast(text, isError = false) {
  const node = $("toast");
  node.textContent = reveal(text).text;
  node.classList.toggle("toast-error", isError);
  node.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (node.hidden = true), 6000);
}

// Replace a container's cards only when the set of cards changed, so a reason being typed survives.
function syncCards(container, approvals, options) {
  const key = approvals.map((a) => `${a.request_id}:${a.status}:${(a.approved_by || []).length}:${a.expires_at}`).join("|");
  if (container.dataset.key === key) return;
  container.dataset.key = key;
  const shared = { ...options, onDecide: decide, principal: view.principal, editor: editControls, extender, undoer, granter: grantOffer };
  container.replaceChildren(...approvals.map((a) => approvalCard(a, shared)));
}

function extender(approval) {
  return extendControls(approval, { api, name: deciderName, refresh: () => refreshSoon(approval.conversation_id) });
}

function undoer(approval) {
  return undoControl(approval, { api, name: deciderName, refresh: () => refreshSoon(approval.conversation_id) });
}

function deciderName() {
  const name = $("decider-name").value.trim();
  return name || null;
}

async function decide(approval, decision, reason, buttons, extra = {}) {
  buttons.forEach((b) => (b.disabled = true));
  // Bound to the arguments this card shows (an edit too): if they are no longer the call's, the server refuses it.
  const body = { decision, args_hash: approval.args_hash, ...extra };
  if (reason && reason.trim()) body.reason = reason.trim();
  const name = deciderName();
  if (name) body.name = name;
  const result = await api(`/api/approvals/${encodeURIComponent(approval.request_id)}/decision`, { json: body });
  if (result.ok) {
    const verb = decision === "edit" ? "approved with edited arguments" : decision.replace("_", " ");
    toast(`${verb}: sent for ${approval.tool_name}${grantNote(result.body)}`);
    // A run of approvals too fast to have been read: said plainly, and kept in the audit.
    if (result.body && result.body.notice) showFatigue(result.body.notice);
  } else {
    toast(errorMessage(result), true);
    buttons.forEach((b) => (b.disabled = false));
  }
  refreshSoon(approval.conversation_id);
}

// A grant made with the approval: its rule, and the waiting calls it approved at once.
function grantNote(body) {
  if (!body || !body.grant || !body.approved) return "";
  const more = body.approved.length ? `; it approved ${body.approved.length} more waiting` : "";
  return `; granted ${body.grant.pattern} (${body.grant.grant_id})${more}`;
}

// MCP servers' questions; a card being filled in stays as it is while its question waits.
async function loadQuestions() {
  const result = await api("/api/elicitations");
  if (!result.ok) return;
  const container = $("question-cards");
  const key = result.body.map((q) => q.question_id).join("|");
  $("questions").hidden = result.body.length === 0;
  if (container.dataset.key === key) return;
  container.dataset.key = key;
  container.replaceChildren(...result.body.map((q) => questionCard(q, answerQuestion)));
}

async function answerQuestion(question, action, content, buttons) {
  buttons.forEach((b) => (b.disabled = true));
  const body = { action };
  if (content) body.content = content;
  const name = deciderName();
  if (name) body.name = name;
  const result = await api(`/api/elicitations/${encodeURIComponent(question.question_id)}/answer`, { json: body });
  if (result.ok) {
    toast(`${action === "accept" ? "answered" : action + "d"}: ${question.server}`);
  } else {
    toast(errorMessage(result), true);
    buttons.forEach((b) => (b.disabled = false));
  }
  refreshSoon(question.conversation_id);
}

function renderConversations(conversations, more) {
  const list = $("conversation-list");
  const tree = inTreeOrder(conversations);
  list.replaceChildren(...tree.map(({ conv, depth }) => conversationItem(conv, view.selectedId, depth)));
  $("conversation-empty").hidden = conversations.length > 0;
  $("conversation-more").hidden = !more;
}

function renderInbox(pending, more) {
  syncCards($("inbox-cards"), pending, { showConversation: true, selection: selectionBox });
  keepWaiting(pending);
  $("inbox-empty").hidden = pending.length > 0;
  $("pending-more").hidden = !more;
  const total = $("pending-total");
  const count = more ? `${pending.length}+` : String(pending.length);
  total.hidden = pending.length === 0;
  total.textContent = count;
  document.title = pending.length ? `(${count}) Approvals inbox` : "Approvals inbox";
}

function renderDetail(detail) {
  $("conversation-title").textContent = reveal(detail.conversation_id).text;
  const pill = $("conversation-status");
  pill.textContent = STATUS_LABELS[detail.turn_status] || String(detail.turn_status);
  pill.className = "status-pill status-" + detail.turn_status;
  $("conversation-temporal").href = detail.temporal_url;
  const notice = $("conversation-notice");
  notice.hidden = !detail.notice;
  notice.textContent = detail.notice || "";
  const hostWait = $("conversation-host-wait");
  hostWait.hidden = !detail.host_wait;
  hostWait.textContent = detail.host_wait ? reveal(detail.host_wait_text).text : "";
  const error = $("conversation-error");
  error.hidden = !detail.last_error;
  error.textContent = detail.last_error ? reveal(`The last turn failed: ${detail.last_error}`, true).text : "";
  renderControls(detail);
  const open = detail.approvals.filter((a) => a.status !== "resolved");
  const decided = detail.approvals.filter((a) => a.status === "resolved");
  syncCards($("conversation-approvals"), open, { showConversation: false });
  syncCards($("decided-cards"), decided, { showConversation: false });
  $("decided-approvals").hidden = decided.length === 0;
  if (view.linked && focusCard(view.linked)) view.linked = null;
  const archived = detail.archived || [];
  const signature = JSON.stringify(detail.messages) + String(archived.length) + String(detail.worker_online);
  if (signature !== view.detailSignature) {
    view.detailSignature = signature;
    const items = transcriptItems(detail.messages, archived);
    if (!detail.worker_online) items.push(el("li", "message message-offline", "The transcript needs a running worker."));
    $("transcript").replaceChildren(...items);
    reattach($("transcript"));
  }
}

async function loadDetail() {
  if (view.detailLoading) {
    view.detailAgain = true;
    return;
  }
  const id = view.selectedId;
  if (!id) return;
  view.detailLoading = true;
  try {
    const result = await api(`/api/conversations/${encodeURIComponent(id)}`);
    if (id !== view.selectedId) return;
    if (result.ok) renderDetail(result.body);
    else toast(errorMessage(result), true);
  } finally {
    view.detailLoading = false;
    if (view.detailAgain) {
      view.detailAgain = false;
      loadDetail();
    }
  }
}

async function refreshLists() {
  const [conversations, pending] = await Promise.all([
    loadPaged("/api/conversations", view.wanted.conversations),
    loadPaged("/api/approvals?status=pending", view.wanted.pending),
  ]);
  if (conversations) renderConversations(conversations.rows, conversations.more);
  if (pending) renderInbox(pending.rows, pending.more);
  loadQuestions();
  if ($("audit").open) loadAudit();
}

function showMore(list) {
  view.wanted[list] += PAGE;
  refreshLists();
}

// Decided requests, newest first; read only while the audit section is open.
async function loadAudit() {
  const result = await api("/api/audit");
  if (!result.ok) return toast(errorMessage(result), true);
  const decided = result.body.filter((row) => row.decision).reverse();
  $("audit-rows").replaceChildren(auditTable(decided));
  $("audit-empty").hidden = decided.length > 0;
}

function refreshSoon(conversationId) {
  if (conversationId && conversationId === view.selectedId) view.detailDirty = true;
  clearTimeout(view.refreshTimer);
  view.refreshTimer = setTimeout(() => {
    refreshLists();
    if (view.detailDirty) {
      view.detailDirty = false;
      loadDetail();
    }
  }, 100);
}

// The id in the address, percent-decoded; a hand-typed address with a stray "%" is taken as written.
function decodedId(encoded) {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}

function route() {
  const match = window.location.hash.match(/^#\/conversations\/(.+)$/);
  view.selectedId = match ? decodedId(match[1]) : null;
  view.detailSignature = "";
  document.body.classList.toggle("has-selection", Boolean(view.selectedId));
  resetStream(view.selectedId);
  $("inbox-view").hidden = Boolean(view.selectedId);
  $("conversation-view").hidden = !view.selectedId;
  for (const id of ["conversation-approvals", "decided-cards"]) delete $(id).dataset.key;
  $("close-button").dataset.armed = "";
  $("close-button").textContent = "Close conversation";
  if (view.selectedId) {
    $("transcript").replaceChildren();
    loadDetail();
  }
  refreshLists();
}

function follow() {
  const live = $("live-status");
  const source = new EventSource("/api/events");
  source.addEventListener("reset", () => {
    view.detailDirty = Boolean(view.selectedId);
    refreshSoon();
  });
  source.addEventListener("ready", () => {
    live.textContent = "live";
    live.className = "live live-on";
    view.detailDirty = Boolean(view.selectedId);
    refreshSoon();
  });
  source.addEventListener("message", (message) => {
    const event = JSON.parse(message.data);
    if (applyDelta(event, $("transcript"))) return;
    refreshSoon(event.conversation_id);
  });
  source.addEventListener("logout", () => {
    // Signed out (here or in another tab) or the session expired: stop following, ask to log in.
    source.close();
    live.textContent = "signed out";
    live.className = "live live-off";
    window.location.assign("/login");
  });
  source.addEventListener("error", () => {
    live.textContent = "reconnecting…";
    live.className = "live live-off";
  });
}

async function startConversation(submit) {
  submit.preventDefault();
  const text = $("start-message").value.trim();
  if (!text) return;
  $("start-button").disabled = true;
  try {
    const result = await api("/api/conversations", { json: { message: text } });
    if (!result.ok) return toast(errorMessage(result), true);
    $("start-message").value = "";
    window.location.hash = "#/conversations/" + encodeURIComponent(result.body.conversation_id);
  } finally {
    $("start-button").disabled = false;
  }
}

async function sendMessage(submit) {
  submit.preventDefault();
  const text = $("message-text").value.trim();
  if (!text || !view.selectedId) return;
  const path = `/api/conversations/${encodeURIComponent(view.selectedId)}/messages`;
  const result = await api(path, { json: { text } });
  if (!result.ok) return toast(errorMessage(result), true);
  $("message-text").value = "";
  toast("message sent");
  refreshSoon(view.selectedId);
}

// A person logged in with their own token decides as themselves: no "Deciding as" field.
function showSession(session) {
  $("logout-form").hidden = !session.token_required;
  view.principal = session.principal;
  if (!session.principal) return;
  $("decider-label").hidden = true;
  const groups = session.principal.groups.join(", ") || "no groups";
  $("signed-in").textContent = reveal(`Signed in as ${session.principal.name} (${groups})`).text;
  $("signed-in").hidden = false;
  setupPush({ api, toast, errorMessage });
}

function main() {
  const name = $("decider-name");
  name.value = localStorage.getItem("decider-name") || "";
  name.addEventListener("change", () => localStorage.setItem("decider-name", name.value.trim()));
  $("start-form").addEventListener("submit", startConversation);
  $("message-form").addEventListener("submit", sendMessage);
  setupControls({ api, toast, errorMessage, selected: () => view.selectedId, refresh: refreshSoon });
  setupBatch({ api, toast, errorMessage, deciderName, refresh: () => refreshSoon() });
  $("audit").addEventListener("toggle", () => $("audit").open && loadAudit());
  $("conversation-more").addEventListener("click", () => showMore("conversations"));
  $("pending-more").addEventListener("click", () => showMore("pending"));
  window.addEventListener("hashchange", route);
  // Who you are comes first: the cards offer their buttons only to those who may decide.
  api("/api/session").then(async (result) => {
    if (result.ok) showSession(result.body);
    view.linked = await followDeepLink(api, toast);
    route();
    follow();
  });
}

main();
