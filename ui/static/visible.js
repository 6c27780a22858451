// What a person may not see: the page's mirror of visible.py (keep the two in step).
// Control and format characters (bidi overrides and isolates, zero-width characters, BOM, tags),
// surrogates, private use, unassigned code points, line/paragraph separators, every space other
// than U+0020, and a few blank-looking letters are shown as \uXXXX escapes, and the text is flagged.
// The escape changes only what is shown; what runs is the model's text as it is.

const HIDDEN = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}\u034f\u115f\u1160\u17b4\u17b5\u180e\u2800\u3164\uffa0\ufe00-\ufe0f\u{e0100}-\u{e01ef}]$/u;
const LAYOUT = { "\n": "\\n", "\t": "\\t" };

export function isHidden(char) {
  if (char === " " || char in LAYOUT) return false;
  return HIDDEN.test(char);
}

function escapeChar(char) {
  const code = char.codePointAt(0);
  return code <= 0xffff ? "\\u" + code.toString(16).padStart(4, "0") : "\\U" + code.toString(16).padStart(8, "0");
}

// {text, hidden}: text safe to show; newline and tab kept when multiline, else written as \n and \t.
export function reveal(value, multiline = false) {
  let text = "";
  let hidden = false;
  for (const char of String(value ?? "")) {
    if (char in LAYOUT) {
      text += multiline ? char : LAYOUT[char];
    } else if (isHidden(char)) {
      hidden = true;
      text += escapeChar(char);
    } else {
      text += char;
    }
  }
  return { text, hidden };
}
