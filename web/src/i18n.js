// Chinese and English strings. The language follows the browser until the user switches it.
const STRINGS = {
  en: {
    chat: "Chat", knowledge: "Knowledge base", send: "Send", stop: "Stop", newChat: "New chat",
    placeholder: "Ask anything — Enter sends, Shift+Enter starts a new line",
    tools: "Tools", useRag: "Allow knowledge base", mode: "Mode", auto: "auto",
    useRagHelp: "Ticked: questions that fit the knowledge base are answered from it. Unticked: it is never used. "
      + "To always answer from it, set Mode to rag.",
    route: "Route", plan: "Task graph", trace: "Steps", citations: "Sources", noGraph: "No task graph for this answer.",
    upload: "Drop files here or choose them", uploading: "uploading", uploaded: "added", failed: "failed",
    upload_added: "added", upload_updated: "updated: new version", upload_unchanged: "unchanged: already in the knowledge base",
    reconnecting: "Connection dropped — reconnecting…", connectionLost: "Connection lost — the answer may be incomplete.",
    unreachable: "Could not reach the server — no answer arrived.", reconnect: "Reconnect",
    documents: "Documents", shared: "shared", sharedHelp: "Added on the server (saber ingest): every user's searches see it", delete: "Delete", open: "Open", close: "Close", empty: "Nothing here yet.",
    signIn: "Sign in", apiKey: "API key", keyNeeded: "This server needs an API key.", badKey: "That key was refused.",
    signOut: "Sign out", cancelled: "cancelled", interrupted: "Interrupted", error: "Error",
    params: "Parameters", result: "Result", attempts: "attempts", duration: "duration", winner: "winner",
    approve: "Approve", deny: "Deny", approvalNeeded: "Waiting for your approval", language: "中文",
    conversations: "Conversations", chunk: "chunk", chunks: "chunks", score: "score", thinking: "Working…",
    confirmDelete: "Delete this document?", size: "size",
    vectors: "vectors", keywordUntilDone: "keyword search until done",
    embeddingFailing: "embedding failing", retrying: "retrying",
    steps: "steps",
  },
  zh: {
    chat: "对话", knowledge: "知识库", send: "发送", stop: "停止", newChat: "新对话",
    placeholder: "随便问 — Enter 发送，Shift+Enter 换行",
    tools: "工具", useRag: "允许使用知识库", mode: "模式", auto: "自动",
    useRagHelp: "勾选：与知识库相关的问题用知识库回答；不勾选：从不使用知识库。要一定用知识库回答，请把模式设为 rag。",
    route: "路由", plan: "任务图", trace: "步骤", citations: "来源", noGraph: "这个回答没有任务图。",
    upload: "把文件拖到这里，或点击选择", uploading: "上传中", uploaded: "已添加", failed: "失败",
    upload_added: "已添加", upload_updated: "已更新：新版本", upload_unchanged: "未变化：知识库里已有",
    reconnecting: "连接中断 — 正在重新连接…", connectionLost: "连接已断开 — 回答可能不完整。",
    unreachable: "无法连接服务器 — 没有收到回答。", reconnect: "重新连接",
    documents: "文档", shared: "共享", sharedHelp: "在服务器上添加（saber ingest）：所有用户的检索都能看到", delete: "删除", open: "打开", close: "关闭", empty: "这里还没有内容。",
    signIn: "登录", apiKey: "API 密钥", keyNeeded: "这个服务需要 API 密钥。", badKey: "密钥被拒绝。",
    signOut: "退出", cancelled: "已取消", interrupted: "已中断", error: "错误",
    params: "参数", result: "结果", attempts: "次尝试", duration: "耗时", winner: "胜出",
    approve: "批准", deny: "拒绝", approvalNeeded: "等待你的批准", language: "English",
    conversations: "对话列表", chunk: "个片段", chunks: "个片段", score: "得分", thinking: "处理中…",
    confirmDelete: "删除这个文档？", size: "大小",
    vectors: "向量", keywordUntilDone: "完成前仅用关键词检索",
    embeddingFailing: "向量计算失败", retrying: "正在重试",
    steps: "个步骤",
  },
};

let lang = localStorage.getItem("saber.lang") || ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en");

export function t(key) {
  return (STRINGS[lang] && STRINGS[lang][key]) || STRINGS.en[key] || key;
}

export function currentLang() {
  return lang;
}

export function toggleLang() {
  lang = lang === "zh" ? "en" : "zh";
  localStorage.setItem("saber.lang", lang);
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
}

document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
