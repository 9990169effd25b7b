// Conversations kept in the browser (per signed-in key), so history survives a reload.
const LIMIT = 50;

function storageKey(user) {
  return `saber.conversations.${user || "local"}`;
}

export class Conversations {
  constructor(user) {
    this.user = user;
    try {
      this.items = JSON.parse(localStorage.getItem(storageKey(user)) || "[]");
    } catch {
      this.items = [];
    }
    if (!this.items.length) this.create();
    this.currentId = this.items[0].id;
  }

  get current() {
    return this.items.find((c) => c.id === this.currentId) || this.items[0];
  }

  create() {
    const conv = { id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`, title: "", messages: [] };
    this.items.unshift(conv);
    this.items = this.items.slice(0, LIMIT);
    this.currentId = conv.id;
    this.save();
    return conv;
  }

  select(id) {
    if (this.items.some((c) => c.id === id)) this.currentId = id;
  }

  save() {
    try {
      localStorage.setItem(storageKey(this.user), JSON.stringify(this.items));
    } catch {
      // Storage full: drop the oldest conversations' event logs and try once more.
      for (const conv of this.items.slice(LIMIT / 2)) for (const m of conv.messages) m.events = [];
      try {
        localStorage.setItem(storageKey(this.user), JSON.stringify(this.items));
      } catch {
        /* keep working in memory */
      }
    }
  }
}
