// "And allow calls like this": with an approval, a grant of the narrowest rule covering the call
// (the server's offer, core/grant_patterns.py), in this conversation or everywhere, for an hour, a
// day or until revoked. The rule is text the person may widen knowingly: an input prefilled with
// it, the wider steps listed beside it. The server checks the rule and who may grant it.
import { el, shownEl } from "./render.js";
import { reveal } from "./visible.js";

export const LIFETIMES = [
  ["1 hour", "3600"],
  ["1 day", "86400"],
  ["until revoked", ""],
];

function choice(className, label, options, id) {
  const wrap = el("label", className + "-label", label + " ");
  const select = el("select", className);
  select.id = id;
  for (const [text, value] of options) {
    const option = el("option", null, text);
    option.value = value;
    select.append(option);
  }
  wrap.htmlFor = id;
  wrap.append(select);
  return [wrap, select];
}

// Returns { node, extra() }: extra() is what the approval carries ({} when the box is not ticked).
export function grantOffer(approval) {
  const offer = approval.grant_offer;
  const box = el("div", "grant-offer");
  const id = "grant-" + approval.request_id;
  const toggle = el("input", "grant-toggle");
  toggle.type = "checkbox";
  toggle.id = id;
  const label = el("label", "grant-toggle-label", " and allow calls like this");
  label.htmlFor = id;
  box.append(toggle, label);
  const fields = el("div", "grant-fields");
  fields.hidden = true;
  const patternId = id + "-pattern";
  const patternLabel = el("label", "grant-pattern-label", "Rule (widen it only knowingly) ");
  patternLabel.htmlFor = patternId;
  const pattern = el("input", "grant-pattern");
  pattern.id = patternId;
  pattern.maxLength = 100000;
  pattern.spellcheck = false;
  pattern.value = offer.rules[0];
  const steps = el("datalist");
  steps.id = patternId + "-steps";
  for (const rule of [...offer.rules, ...offer.wider]) {
    const option = el("option");
    option.value = rule;
    steps.append(option);
  }
  pattern.setAttribute("list", steps.id);
  fields.append(patternLabel, pattern, steps);
  // The rule comes from text the model wrote: what hides in it is shown escaped, as on the card.
  if (reveal(offer.rules[0]).hidden) fields.append(shownEl("p", "grant-escaped", `The rule, escaped: ${offer.rules[0]}`));
  if (offer.rules.length > 1) {
    const others = offer.rules.slice(1).join(", ");
    fields.append(shownEl("p", "grant-others", `The other commands of this call need their own rule: ${others}`));
  }
  if (offer.wider.length) fields.append(shownEl("p", "grant-wider", `Wider, step by step: ${offer.wider.join(" → ")}`));
  const [scopeLabel, scope] = choice("grant-scope", "Where", [["this conversation", "conversation"], ["everywhere", "everywhere"]], id + "-scope");
  const [lifeLabel, lifetime] = choice("grant-for", "For", LIFETIMES, id + "-for");
  fields.append(scopeLabel, lifeLabel);
  box.append(fields);
  toggle.addEventListener("change", () => (fields.hidden = !toggle.checked));
  function extra() {
    if (!toggle.checked) return {};
    const grant = { pattern: pattern.value.trim(), scope: scope.value };
    if (lifetime.value) grant.for_seconds = Number(lifetime.value);
    return { grant };
  }
  return { node: box, extra };
}
