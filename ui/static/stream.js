// The reply the model is writing right now, shown as it streams (message.delta events).
// One model call (turn, call id) at a time per open conversation; a retried call (a higher attempt)
// clears what the failed attempt wrote and says it restarted, so two attempts never mix. The text
// goes in through textContent (via shownEl), like every other model text. The recorded message
// replaces this item when the transcript reloads.
import { el, shownEl } from "./render.js";

const live = { conversationId: null, call: null, attempt: 0, text: "", restarts: 0, item: null, done: false };

export function resetStream(conversationId) {
  live.conversationId = conversationId;
  live.call = null;
  live.item = null;
}

function streamItem() {
  const item = el("li", "message message-assistant message-streaming");
  item.dataset.streaming = "true";
  item.append(el("span", "message-role", "Assistant (writing…)"));
  return item;
}

function render(transcript) {
  if (!live.item) live.item = streamItem();
  const item = live.item;
  item.dataset.attempt = String(live.attempt);
  const marker = live.restarts
    ? el("p", "stream-restarted", `The model call restarted (attempt ${live.attempt}); its reply starts over.`)
    : null;
  const text = shownEl("p", "message-text stream-text", live.text, true);
  item.replaceChildren(item.firstChild, ...(marker ? [marker] : []), text);
  if (item.parentNode !== transcript) transcript.append(item);
}

// After the transcript was rebuilt: a reply still being written stays at its end; a finished one
// gives way to the recorded message.
export function reattach(transcript) {
  if (live.item && !live.done) transcript.append(live.item);
}

// Takes one event; true when it was a delta (the caller need not reload anything for it).
export function applyDelta(event, transcript) {
  if (event.event_type !== "message.delta") return false;
  if (event.conversation_id !== live.conversationId) return true;
  const delta = event.payload || {};
  const call = `${delta.turn_id}/${delta.call_id}`;
  if (call !== live.call) {
    live.call = call;
    live.attempt = delta.attempt;
    live.text = "";
    live.restarts = 0;
    live.item = null;
    live.done = false;
  } else if (delta.attempt < live.attempt) {
    return true; // a late piece of an attempt already replaced
  } else if (delta.attempt > live.attempt) {
    live.attempt = delta.attempt;
    live.text = "";
    live.restarts += 1;
    live.done = false;
  }
  if (delta.restarted && live.text === "" && live.restarts === 0 && delta.attempt > 1) live.restarts = 1;
  const text = String(delta.text || "");
  if (delta.offset > live.text.length) live.text += "…"; // joined mid-reply: the start was missed
  if (delta.offset < live.text.length && delta.offset + text.length <= live.text.length) return true;
  live.text += text;
  live.done = Boolean(delta.done);
  render(transcript);
  return true;
}
