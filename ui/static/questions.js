// Question cards: an MCP server asks a person mid-call (elicitation). The form is generated from
// the server's requested schema; every text in it is the server's and is set as text, never as markup.
import { el, shownEl } from "./render.js";

function choices(schema) {
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : schema.enum;
    return schema.enum.map((value, i) => ({ value: String(value), title: String(names[i] ?? value) }));
  }
  const options = schema.oneOf || schema.anyOf;
  if (Array.isArray(options)) {
    return options.filter((o) => o && "const" in o).map((o) => ({ value: String(o.const), title: String(o.title ?? o.const) }));
  }
  return null;
}

const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

// One field: its control, and a reader that gives its value (undefined: left out of the answer).
function field(name, schema, required) {
  const wrap = el("div", "question-field");
  wrap.dataset.field = name;
  const label = el("label", "question-label");
  label.append(shownEl("span", "", schema.title || name));
  if (required) label.append(el("span", "required", " *"));
  wrap.append(label);
  if (schema.description) wrap.append(shownEl("p", "question-help", schema.description));
  const many = schema.type === "array" ? choices(schema.items || {}) : null;
  const one = choices(schema);
  let read;
  if (schema.type === "boolean") {
    const box = el("input");
    box.type = "checkbox";
    box.name = name;
    box.checked = schema.default === true;
    label.prepend(box);
    read = () => box.checked;
  } else if (many) {
    const chosen = new Set(Array.isArray(schema.default) ? schema.default.map(String) : []);
    const boxes = many.map((option) => {
      const item = el("label", "question-choice");
      const box = el("input");
      box.type = "checkbox";
      box.name = name;
      box.value = option.value;
      box.checked = chosen.has(option.value);
      item.append(box, shownEl("span", "", option.title));
      wrap.append(item);
      return box;
    });
    read = () => boxes.filter((b) => b.checked).map((b) => b.value);
  } else if (one) {
    const select = el("select");
    select.name = name;
    if (!required) select.append(el("option", "", ""));
    for (const option of one) {
      const item = el("option", "", option.title);
      item.value = option.value;
      select.append(item);
    }
    if (schema.default !== undefined) select.value = String(schema.default);
    wrap.append(select);
    read = () => (select.value === "" ? undefined : select.value);
  } else {
    const input = el("input");
    input.name = name;
    const numeric = schema.type === "integer" || schema.type === "number";
    input.type = numeric ? "number" : INPUT_TYPES[schema.format] || "text";
    if (numeric) {
      input.step = schema.type === "integer" ? "1" : "any";
      if (schema.minimum !== undefined) input.min = String(schema.minimum);
      if (schema.maximum !== undefined) input.max = String(schema.maximum);
    }
    if (schema.default !== undefined) input.value = String(schema.default);
    wrap.append(input);
    read = () => {
      if (input.value === "") return undefined;
      return numeric ? Number(input.value) : input.value;
    };
  }
  return { wrap, read };
}

// A card for one question; onAnswer(question, action, content, buttons) sends it.
export function questionCard(question, onAnswer) {
  const card = el("article", "card question-card");
  card.dataset.questionId = question.question_id;
  card.append(el("h3", "", "Question from a tool"));
  const asker = el("p", "question-asker");
  asker.append(el("span", "", "MCP server "), shownEl("code", "", question.server), el("span", "", " during "));
  asker.append(shownEl("code", "", question.tool_name), el("span", "", " in "), shownEl("code", "", question.conversation_id));
  card.append(asker, shownEl("p", "question-message", question.message, true));
  const schema = question.schema || {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const form = el("form", "question-form");
  const fields = Object.entries(schema.properties || {}).map(([name, sub]) => [name, field(name, sub || {}, required.has(name))]);
  for (const [, f] of fields) form.append(f.wrap);
  const buttons = el("div", "buttons");
  const accept = el("button", "primary", "Answer");
  accept.type = "submit";
  const decline = el("button", "danger", "Decline");
  decline.type = "button";
  const cancel = el("button", "", "Cancel");
  cancel.type = "button";
  buttons.append(accept, decline, cancel);
  form.append(buttons, el("p", "expires", `Declined automatically at ${new Date(question.expires_at).toLocaleString()}`));
  const all = [accept, decline, cancel];
  form.addEventListener("submit", (submit) => {
    submit.preventDefault();
    const content = {};
    for (const [name, f] of fields) {
      const value = f.read();
      if (value !== undefined) content[name] = value;
    }
    onAnswer(question, "accept", content, all);
  });
  decline.addEventListener("click", () => onAnswer(question, "decline", null, all));
  cancel.addEventListener("click", () => onAnswer(question, "cancel", null, all));
  card.append(form);
  return card;
}
