// Arguments only a person supplies (supplied_by_approver): the model never gave them, so the card
// asks for each in a password field. The values go with the approval only (the server seals them at
// once for this one request) and are cleared when sent; the page never shows or keeps them.
import { el, shownEl } from "./render.js";

// Returns { node, extra() }: extra() is what the approval carries ({ supplied: {name: value} }).
export function suppliedFields(approval, allowed) {
  const box = el("fieldset", "supplied-fields");
  box.append(el("legend", "supplied-legend", "Supplied by you (the model never sees these; required to approve)"));
  const inputs = approval.supplied_by_approver.map((name) => {
    const id = `supplied-${approval.request_id}-${name}`;
    const label = shownEl("label", "supplied-label", name);
    label.htmlFor = id;
    const input = el("input", "supplied-value");
    input.type = "password";
    input.id = id;
    input.name = name;
    input.autocomplete = "off";
    input.disabled = !allowed;
    input.dataset.argument = name;
    box.append(label, input);
    return input;
  });
  return {
    node: box,
    extra() {
      const supplied = Object.fromEntries(inputs.map((input) => [input.dataset.argument, input.value]));
      inputs.forEach((input) => (input.value = ""));
      return { supplied };
    },
  };
}

// `supplied: password (by alice)`: that a value was supplied and by whom, never the value.
export function suppliedText(supplied) {
  const people = {};
  for (const [name, person] of Object.entries(supplied).sort()) (people[person] = people[person] || []).push(name);
  return "supplied: " + Object.entries(people).map(([person, names]) => `${names.join(", ")} (by ${person})`).join("; ");
}
