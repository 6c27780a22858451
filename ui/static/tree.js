// The inbox's tree: each subagent listed right under the conversation that delegated to it.
// A subagent whose parent is not on this page stays where the page put it.

export function inTreeOrder(conversations) {
  const present = new Set(conversations.map((c) => c.conversation_id));
  const children = new Map();
  for (const conv of conversations) {
    if (conv.parent_id && present.has(conv.parent_id)) {
      if (!children.has(conv.parent_id)) children.set(conv.parent_id, []);
      children.get(conv.parent_id).push(conv);
    }
  }
  const ordered = [];
  const visit = (conv, depth) => {
    ordered.push({ conv, depth });
    for (const child of children.get(conv.conversation_id) || []) visit(child, depth + 1);
  };
  for (const conv of conversations) {
    if (!(conv.parent_id && present.has(conv.parent_id))) visit(conv, conv.parent_id ? 1 : 0);
  }
  return ordered;
}
