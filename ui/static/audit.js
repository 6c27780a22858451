// The audit trail: every decided request with who decided, through which door, on which arguments
// hash, and what became of the call. Untrusted text (arguments, names) goes through shownEl.
import { el, shownEl, when } from "./render.js";
import { suppliedText } from "./supplied.js";

const COLUMNS = ["Requested", "Tool call", "Edited to", "Arguments hash", "Decision", "By", "Via", "Decided", "Outcome"];

export function auditTable(rows) {
  const table = el("table", "audit-table");
  const head = el("tr");
  for (const name of COLUMNS) head.append(el("th", null, name));
  table.append(el("thead"));
  table.tHead.append(head);
  const body = el("tbody");
  for (const row of rows) {
    const line = el("tr", "audit-row outcome-" + row.decision);
    line.dataset.requestId = row.request_id;
    line.append(
      el("td", null, when(row.created_at)),
      cell(shownEl("code", "audit-call", `${row.tool_name} ${JSON.stringify(row.arguments)}`)),
      cell(shownEl("code", "audit-edited", row.edited_arguments ? JSON.stringify(row.edited_arguments) : "-")),
      cell(el("code", "audit-hash", row.decided_args_hash || row.args_hash)),
      el("td", "audit-decision", row.supplied && Object.keys(row.supplied).length ? `${row.decision}; ${suppliedText(row.supplied)}` : row.decision),
      cell(shownEl("span", "audit-by", who(row))),
      el("td", "audit-via", row.decided_via || "-"),
      el("td", null, when(row.resolved_at)),
      el("td", "audit-outcome", row.outcome),
    );
    body.append(line);
  }
  table.append(body);
  return table;
}

function cell(child) {
  const td = el("td");
  td.append(child);
  return td;
}

// Who decided, with the groups their door verified.
function who(row) {
  if (!row.decided_by) return "-";
  const groups = row.decided_groups || [];
  return groups.length ? `${row.decided_by} (${groups.join(", ")})` : row.decided_by;
}
