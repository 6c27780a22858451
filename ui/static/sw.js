// The inbox's service worker (served at /sw.js, scope "/"): shows each push the server sends (a
// request waiting for this person: its summary) and opens the push's link when it is clicked.
// The payload arrives decrypted by the browser: {title, body, url, tag}.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { body: event.data.text() };
  }
  const options = {
    body: String(data.body || ""),
    tag: data.tag ? String(data.tag) : undefined,
    data: { url: safeUrl(data.url) },
    icon: "/static/favicon.svg",
    requireInteraction: true,
  };
  event.waitUntil(self.registration.showNotification(String(data.title || "Approval needed"), options));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || "/";
  event.waitUntil(self.clients.openWindow(url));
});

// Only a web address opens: a link the server did not write (a javascript: URL) falls back to the inbox.
function safeUrl(url) {
  try {
    const parsed = new URL(String(url), self.location.origin);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : "/";
  } catch {
    return "/";
  }
}
