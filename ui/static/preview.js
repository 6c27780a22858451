// What an asked call will change and why the agent wants it (core/previews.py, core/why.py).
// Every text here is the model's, a person's or a file's: it goes in through shownEl (textContent,
// hidden characters revealed), never as HTML.
import { el, shownEl } from "./render.js";

// A unified diff, one element per line, so removed and added lines can be told apart at a glance.
function diffBlock(diff) {
  const pre = el("pre", "preview-diff");
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    let kind = "diff-context";
    if (line.startsWith("+++") || line.startsWith("---")) kind = "diff-file";
    else if (line.startsWith("@@")) kind = "diff-hunk";
    else if (line.startsWith("+")) kind = "diff-added";
    else if (line.startsWith("-")) kind = "diff-removed";
    pre.append(shownEl("span", "diff-line " + kind, line), "\n");
  }
  return pre;
}

export function previewBlock(preview) {
  const block = el("section", "card-preview preview-" + preview.kind);
  block.append(el("p", "card-label", "What it will change:"));
  if (preview.changed_since) block.append(shownEl("p", "preview-changed", preview.changed_since));
  block.append(shownEl("p", "preview-summary", preview.summary));
  if (preview.note) block.append(shownEl("p", "preview-note", preview.note));
  if (preview.diff) block.append(diffBlock(preview.diff));
  if (preview.dry_run) {
    block.append(el("p", "card-label", "The tool's own dry run:"), shownEl("pre", "preview-dry-run", preview.dry_run, true));
  }
  if (preview.words && preview.words.length) {
    const list = el("ol", "preview-words");
    for (const word of preview.words) list.append(shownEl("li", "preview-word", word));
    block.append(el("p", "card-label", "The commands, as the rules see them:"), list);
  }
  if (preview.target_hash) {
    const bound = el("p", "preview-bound", "Bound to the content it read: ");
    bound.append(el("code", "target-hash", preview.target_hash.slice(0, 16)));
    block.append(bound);
  }
  return block;
}

export function whyBlock(why) {
  const block = el("section", "card-why");
  const line = (label, text, cls) => {
    if (!text) return;
    const p = el("p", "why-line " + cls);
    p.append(el("strong", "", label + " "), shownEl("span", "why-text", text, true));
    block.append(p);
  };
  line("Task from the parent:", why.parent_task, "why-parent");
  line("The user asked:", why.user_message, "why-user");
  line("The assistant said:", why.assistant_text, "why-assistant");
  if (why.earlier && why.earlier.length) {
    const list = el("ul", "why-earlier");
    for (const item of why.earlier) {
      const reason = item.reason ? `: ${item.reason}` : "";
      list.append(shownEl("li", "why-decision", `${item.tool_name} ${item.resolution} by ${item.decided_by || "unknown"}${reason}`));
    }
    block.append(el("p", "card-label", "Earlier decisions in this conversation:"), list);
  }
  return block.childNodes.length ? block : null;
}
