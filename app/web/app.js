// ../typescript/node_modules/openapi-fetch/dist/index.mjs
var PATH_PARAM_RE = /\{[^{}]+\}/g;
var supportsRequestInitExt = () => {
  return typeof process === "object" && Number.parseInt(process?.versions?.node?.substring(0, 2)) >= 18 && process.versions.undici;
};
function randomID() {
  return Math.random().toString(36).slice(2, 11);
}
function createClient(clientOptions) {
  let {
    baseUrl = "",
    Request: CustomRequest = globalThis.Request,
    fetch: baseFetch = globalThis.fetch,
    querySerializer: globalQuerySerializer,
    bodySerializer: globalBodySerializer,
    pathSerializer: globalPathSerializer,
    headers: baseHeaders,
    requestInitExt = void 0,
    ...baseOptions
  } = { ...clientOptions };
  requestInitExt = supportsRequestInitExt() ? requestInitExt : void 0;
  baseUrl = removeTrailingSlash(baseUrl);
  const globalMiddlewares = [];
  async function coreFetch(schemaPath, fetchOptions) {
    const {
      baseUrl: localBaseUrl,
      fetch = baseFetch,
      Request = CustomRequest,
      headers,
      params = {},
      parseAs = "json",
      querySerializer: requestQuerySerializer,
      bodySerializer = globalBodySerializer ?? defaultBodySerializer,
      pathSerializer: requestPathSerializer,
      body,
      middleware: requestMiddlewares = [],
      ...init
    } = fetchOptions || {};
    let finalBaseUrl = baseUrl;
    if (localBaseUrl) {
      finalBaseUrl = removeTrailingSlash(localBaseUrl) ?? baseUrl;
    }
    let querySerializer = typeof globalQuerySerializer === "function" ? globalQuerySerializer : createQuerySerializer(globalQuerySerializer);
    if (requestQuerySerializer) {
      querySerializer = typeof requestQuerySerializer === "function" ? requestQuerySerializer : createQuerySerializer({
        ...typeof globalQuerySerializer === "object" ? globalQuerySerializer : {},
        ...requestQuerySerializer
      });
    }
    const pathSerializer = requestPathSerializer || globalPathSerializer || defaultPathSerializer;
    const serializedBody = body === void 0 ? void 0 : bodySerializer(
      body,
      // Note: we declare mergeHeaders() both here and below because it’s a bit of a chicken-or-egg situation:
      // bodySerializer() needs all headers so we aren’t dropping ones set by the user, however,
      // the result of this ALSO sets the lowest-priority content-type header. So we re-merge below,
      // setting the content-type at the very beginning to be overwritten.
      // Lastly, based on the way headers work, it’s not a simple “present-or-not” check becauase null intentionally un-sets headers.
      mergeHeaders(baseHeaders, headers, params.header)
    );
    const finalHeaders = mergeHeaders(
      // with no body, we should not to set Content-Type
      serializedBody === void 0 || // if serialized body is FormData; browser will correctly set Content-Type & boundary expression
      serializedBody instanceof FormData ? {} : {
        "Content-Type": "application/json"
      },
      baseHeaders,
      headers,
      params.header
    );
    const finalMiddlewares = [...globalMiddlewares, ...requestMiddlewares];
    const requestInit = {
      redirect: "follow",
      ...baseOptions,
      ...init,
      body: serializedBody,
      headers: finalHeaders
    };
    let id;
    let options;
    let request = new Request(
      createFinalURL(schemaPath, { baseUrl: finalBaseUrl, params, querySerializer, pathSerializer }),
      requestInit
    );
    let response;
    for (const key in init) {
      if (!(key in request)) {
        request[key] = init[key];
      }
    }
    if (finalMiddlewares.length) {
      id = randomID();
      options = Object.freeze({
        baseUrl: finalBaseUrl,
        fetch,
        parseAs,
        querySerializer,
        bodySerializer,
        pathSerializer
      });
      for (const m of finalMiddlewares) {
        if (m && typeof m === "object" && typeof m.onRequest === "function") {
          const result = await m.onRequest({
            request,
            schemaPath,
            params,
            options,
            id
          });
          if (result) {
            if (result instanceof Request) {
              request = result;
            } else if (result instanceof Response) {
              response = result;
              break;
            } else {
              throw new Error("onRequest: must return new Request() or Response() when modifying the request");
            }
          }
        }
      }
    }
    if (!response) {
      try {
        response = await fetch(request, requestInitExt);
      } catch (error2) {
        let errorAfterMiddleware = error2;
        if (finalMiddlewares.length) {
          for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
            const m = finalMiddlewares[i];
            if (m && typeof m === "object" && typeof m.onError === "function") {
              const result = await m.onError({
                request,
                error: errorAfterMiddleware,
                schemaPath,
                params,
                options,
                id
              });
              if (result) {
                if (result instanceof Response) {
                  errorAfterMiddleware = void 0;
                  response = result;
                  break;
                }
                if (result instanceof Error) {
                  errorAfterMiddleware = result;
                  continue;
                }
                throw new Error("onError: must return new Response() or instance of Error");
              }
            }
          }
        }
        if (errorAfterMiddleware) {
          throw errorAfterMiddleware;
        }
      }
      if (finalMiddlewares.length) {
        for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
          const m = finalMiddlewares[i];
          if (m && typeof m === "object" && typeof m.onResponse === "function") {
            const result = await m.onResponse({
              request,
              response,
              schemaPath,
              params,
              options,
              id
            });
            if (result) {
              if (!(result instanceof Response)) {
                throw new Error("onResponse: must return new Response() when modifying the response");
              }
              response = result;
            }
          }
        }
      }
    }
    const contentLength = response.headers.get("Content-Length");
    if (response.status === 204 || request.method === "HEAD" || contentLength === "0" && !response.headers.get("Transfer-Encoding")?.includes("chunked")) {
      return response.ok ? { data: void 0, response } : { error: void 0, response };
    }
    if (response.ok) {
      const getResponseData = async () => {
        if (parseAs === "stream") {
          return response.body;
        }
        if (parseAs === "json" && !contentLength) {
          const raw = await response.text();
          return raw ? JSON.parse(raw) : void 0;
        }
        return await response[parseAs]();
      };
      return { data: await getResponseData(), response };
    }
    let error = await response.text();
    try {
      error = JSON.parse(error);
    } catch {
    }
    return { error, response };
  }
  return {
    request(method, url, init) {
      return coreFetch(url, { ...init, method: method.toUpperCase() });
    },
    /** Call a GET endpoint */
    GET(url, init) {
      return coreFetch(url, { ...init, method: "GET" });
    },
    /** Call a PUT endpoint */
    PUT(url, init) {
      return coreFetch(url, { ...init, method: "PUT" });
    },
    /** Call a POST endpoint */
    POST(url, init) {
      return coreFetch(url, { ...init, method: "POST" });
    },
    /** Call a DELETE endpoint */
    DELETE(url, init) {
      return coreFetch(url, { ...init, method: "DELETE" });
    },
    /** Call a OPTIONS endpoint */
    OPTIONS(url, init) {
      return coreFetch(url, { ...init, method: "OPTIONS" });
    },
    /** Call a HEAD endpoint */
    HEAD(url, init) {
      return coreFetch(url, { ...init, method: "HEAD" });
    },
    /** Call a PATCH endpoint */
    PATCH(url, init) {
      return coreFetch(url, { ...init, method: "PATCH" });
    },
    /** Call a TRACE endpoint */
    TRACE(url, init) {
      return coreFetch(url, { ...init, method: "TRACE" });
    },
    /** Register middleware */
    use(...middleware) {
      for (const m of middleware) {
        if (!m) {
          continue;
        }
        if (typeof m !== "object" || !("onRequest" in m || "onResponse" in m || "onError" in m)) {
          throw new Error("Middleware must be an object with one of `onRequest()`, `onResponse() or `onError()`");
        }
        globalMiddlewares.push(m);
      }
    },
    /** Unregister middleware */
    eject(...middleware) {
      for (const m of middleware) {
        const i = globalMiddlewares.indexOf(m);
        if (i !== -1) {
          globalMiddlewares.splice(i, 1);
        }
      }
    }
  };
}
function serializePrimitiveParam(name, value, options) {
  if (value === void 0 || value === null) {
    return "";
  }
  if (typeof value === "object") {
    throw new Error(
      "Deeply-nested arrays/objects aren’t supported. Provide your own `querySerializer()` to handle these."
    );
  }
  return `${name}=${options?.allowReserved === true ? value : encodeURIComponent(value)}`;
}
function serializeObjectParam(name, value, options) {
  if (!value || typeof value !== "object") {
    return "";
  }
  const values2 = [];
  const joiner = {
    simple: ",",
    label: ".",
    matrix: ";"
  }[options.style] || "&";
  if (options.style !== "deepObject" && options.explode === false) {
    for (const k in value) {
      values2.push(k, options.allowReserved === true ? value[k] : encodeURIComponent(value[k]));
    }
    const final2 = values2.join(",");
    switch (options.style) {
      case "form": {
        return `${name}=${final2}`;
      }
      case "label": {
        return `.${final2}`;
      }
      case "matrix": {
        return `;${name}=${final2}`;
      }
      default: {
        return final2;
      }
    }
  }
  for (const k in value) {
    const finalName = options.style === "deepObject" ? `${name}[${k}]` : k;
    values2.push(serializePrimitiveParam(finalName, value[k], options));
  }
  const final = values2.join(joiner);
  return options.style === "label" || options.style === "matrix" ? `${joiner}${final}` : final;
}
function serializeArrayParam(name, value, options) {
  if (!Array.isArray(value)) {
    return "";
  }
  if (options.explode === false) {
    const joiner2 = { form: ",", spaceDelimited: "%20", pipeDelimited: "|" }[options.style] || ",";
    const final = (options.allowReserved === true ? value : value.map((v) => encodeURIComponent(v))).join(joiner2);
    switch (options.style) {
      case "simple": {
        return final;
      }
      case "label": {
        return `.${final}`;
      }
      case "matrix": {
        return `;${name}=${final}`;
      }
      // case "spaceDelimited":
      // case "pipeDelimited":
      default: {
        return `${name}=${final}`;
      }
    }
  }
  const joiner = { simple: ",", label: ".", matrix: ";" }[options.style] || "&";
  const values2 = [];
  for (const v of value) {
    if (options.style === "simple" || options.style === "label") {
      values2.push(options.allowReserved === true ? v : encodeURIComponent(v));
    } else {
      values2.push(serializePrimitiveParam(name, v, options));
    }
  }
  return options.style === "label" || options.style === "matrix" ? `${joiner}${values2.join(joiner)}` : values2.join(joiner);
}
function createQuerySerializer(options) {
  return function querySerializer(queryParams) {
    const search = [];
    if (queryParams && typeof queryParams === "object") {
      for (const name in queryParams) {
        const value = queryParams[name];
        if (value === void 0 || value === null) {
          continue;
        }
        if (Array.isArray(value)) {
          if (value.length === 0) {
            continue;
          }
          search.push(
            serializeArrayParam(name, value, {
              style: "form",
              explode: true,
              ...options?.array,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        if (typeof value === "object") {
          search.push(
            serializeObjectParam(name, value, {
              style: "deepObject",
              explode: true,
              ...options?.object,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        search.push(serializePrimitiveParam(name, value, options));
      }
    }
    return search.join("&");
  };
}
function defaultPathSerializer(pathname, pathParams) {
  let nextURL = pathname;
  for (const match of pathname.match(PATH_PARAM_RE) ?? []) {
    let name = match.substring(1, match.length - 1);
    let explode = false;
    let style = "simple";
    if (name.endsWith("*")) {
      explode = true;
      name = name.substring(0, name.length - 1);
    }
    if (name.startsWith(".")) {
      style = "label";
      name = name.substring(1);
    } else if (name.startsWith(";")) {
      style = "matrix";
      name = name.substring(1);
    }
    if (!pathParams || pathParams[name] === void 0 || pathParams[name] === null) {
      continue;
    }
    const value = pathParams[name];
    if (Array.isArray(value)) {
      nextURL = nextURL.replace(match, serializeArrayParam(name, value, { style, explode }));
      continue;
    }
    if (typeof value === "object") {
      nextURL = nextURL.replace(match, serializeObjectParam(name, value, { style, explode }));
      continue;
    }
    if (style === "matrix") {
      nextURL = nextURL.replace(match, `;${serializePrimitiveParam(name, value)}`);
      continue;
    }
    nextURL = nextURL.replace(match, style === "label" ? `.${encodeURIComponent(value)}` : encodeURIComponent(value));
  }
  return nextURL;
}
function defaultBodySerializer(body, headers) {
  if (body instanceof FormData) {
    return body;
  }
  if (headers) {
    const contentType = headers.get instanceof Function ? headers.get("Content-Type") ?? headers.get("content-type") : headers["Content-Type"] ?? headers["content-type"];
    if (contentType === "application/x-www-form-urlencoded") {
      return new URLSearchParams(body).toString();
    }
  }
  return JSON.stringify(body);
}
function createFinalURL(pathname, options) {
  let finalURL = `${options.baseUrl}${pathname}`;
  if (options.params?.path) {
    finalURL = options.pathSerializer(finalURL, options.params.path);
  }
  let search = options.querySerializer(options.params.query ?? {});
  if (search.startsWith("?")) {
    search = search.substring(1);
  }
  if (search) {
    finalURL += `?${search}`;
  }
  return finalURL;
}
function mergeHeaders(...allHeaders) {
  const finalHeaders = new Headers();
  for (const h2 of allHeaders) {
    if (!h2 || typeof h2 !== "object") {
      continue;
    }
    const iterator = h2 instanceof Headers ? h2.entries() : Object.entries(h2);
    for (const [k, v] of iterator) {
      if (v === null) {
        finalHeaders.delete(k);
      } else if (Array.isArray(v)) {
        for (const v2 of v) {
          finalHeaders.append(k, v2);
        }
      } else if (v !== void 0) {
        finalHeaders.set(k, v);
      }
    }
  }
  return finalHeaders;
}
function removeTrailingSlash(url) {
  if (url.endsWith("/")) {
    return url.substring(0, url.length - 1);
  }
  return url;
}

// ../typescript/src/index.ts
var ApiError = class extends Error {
  constructor(status, code, detail) {
    super(`${status} ${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.name = "ApiError";
  }
  status;
  code;
  detail;
};
function ok(answer) {
  if (answer.response.ok) {
    return answer.data;
  }
  throw errorOf(answer.response.status, answer.error);
}
function errorOf(status, body) {
  const detail = body?.error;
  if (detail && typeof detail.code === "string") {
    return new ApiError(status, detail.code, String(detail.message ?? ""));
  }
  return new ApiError(status, "http_" + status, "the API answered without its error shape");
}
var Vitals = class {
  constructor(options) {
    this.options = options;
    const fetchImpl = options.fetch;
    this.api = createClient({
      baseUrl: options.baseUrl,
      ...fetchImpl ? { fetch: fetchImpl } : {}
    });
    const bearer = {
      onRequest: ({ request }) => {
        if (this.current && !request.headers.has("Authorization")) {
          request.headers.set("Authorization", `Bearer ${this.current.accessToken}`);
        }
        return request;
      }
    };
    this.api.use(bearer);
  }
  options;
  /** Every operation of the document, typed (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`). */
  api;
  current = null;
  /** The session requests are sent with, if signed in. */
  get session() {
    return this.current;
  }
  /** Resumes a session kept from before (the phone's keychain). */
  resume(session) {
    this.setSession(session);
  }
  /** Creates an account and signs it in. */
  async register(body) {
    return this.signedIn(ok(await this.api.POST("/v1/auth/register", { body })));
  }
  /** Signs in with email and password. */
  async login(email, password) {
    const body = { email, password };
    return this.signedIn(ok(await this.api.POST("/v1/auth/login", { body })));
  }
  /** Exchanges the refresh token (once) for a new pair. */
  async refresh() {
    const refresh_token = this.requireSession().refreshToken;
    const body = { refresh_token };
    return this.signedIn(ok(await this.api.POST("/v1/auth/refresh", { body })));
  }
  /** Ends the session's refresh token and forgets the session. */
  async logout() {
    const refresh_token = this.requireSession().refreshToken;
    ok(await this.api.POST("/v1/auth/logout", { body: { refresh_token } }));
    this.setSession(null);
  }
  requireSession() {
    if (!this.current) {
      throw new ApiError(401, "signed_out", "no session: sign in first");
    }
    return this.current;
  }
  signedIn(reply) {
    const session = {
      userId: reply.user_id,
      accessToken: reply.access_token,
      refreshToken: reply.refresh_token
    };
    this.setSession(session);
    return session;
  }
  setSession(session) {
    this.current = session;
    this.options.onSession?.(session);
  }
};
async function eventually(what, probe, withinMs = 3e4, everyMs = 50) {
  const deadline = Date.now() + withinMs;
  for (; ; ) {
    const found = await probe();
    if (found !== void 0) {
      return found;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${withinMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

// src/session.ts
var KEY = "vitals.session";
function kept() {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? JSON.parse(raw) : null;
  } catch {
    return null;
  }
}
var vitals = new Vitals({
  baseUrl: window.location.origin,
  onSession: (session) => {
    if (session) {
      sessionStorage.setItem(KEY, JSON.stringify(session));
    } else {
      sessionStorage.removeItem(KEY);
    }
  }
});
vitals.resume(kept());
async function withSession(call) {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401 || !vitals.session) {
      throw error;
    }
    try {
      await vitals.refresh();
    } catch (refused) {
      vitals.resume(null);
      throw refused;
    }
    return call();
  }
}

// src/dom.ts
function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") {
      element.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else if (value !== false && value !== void 0) {
      element.setAttribute(name, String(value));
    }
  }
  append(element, ...children);
  return element;
}
function append(parent, ...children) {
  for (const child of children) {
    if (child) {
      parent.append(child);
    }
  }
}
function replace(parent, ...children) {
  parent.replaceChildren();
  append(parent, ...children);
}
function field(label, name, attrs = {}) {
  return h("label", {}, label, h("input", { name, ...attrs }));
}
function values(form) {
  const out = {};
  new FormData(form).forEach((value, name) => {
    out[name] = typeof value === "string" ? value.trim() : "";
  });
  return out;
}
function describe(error) {
  if (error instanceof ApiError) {
    return `${error.detail} (${error.code})`;
  }
  return error instanceof Error ? error.message : String(error);
}
async function submitting(form, action) {
  const button = form.querySelector("button");
  const line = form.querySelector("[role=alert]");
  if (line) {
    line.textContent = "";
  }
  button?.setAttribute("disabled", "");
  const label = button?.textContent ?? "";
  if (button) {
    button.textContent = `${label}…`;
  }
  try {
    await action();
  } catch (error) {
    if (line) {
      line.textContent = describe(error);
    } else {
      throw error;
    }
  } finally {
    button?.removeAttribute("disabled");
    if (button) {
      button.textContent = label;
    }
  }
}
function errorLine() {
  return h("p", { class: "error", role: "alert" });
}

// src/auth.ts
function authScreen(signedIn) {
  const timezone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const signUp = h(
    "form",
    { "data-test": "sign-up", class: "card" },
    h("h2", {}, "Create an account"),
    field("Name", "display_name", { required: true, maxlength: 80, autocomplete: "name" }),
    field("Email", "email", { type: "email", required: true, autocomplete: "email" }),
    field("Password", "password", { type: "password", required: true, minlength: 10, autocomplete: "new-password" }),
    field("Timezone", "timezone", { required: true, value: timezone }),
    h("button", { type: "submit" }, "Sign up"),
    errorLine()
  );
  signUp.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(signUp, async () => {
      const v = values(signUp);
      await vitals.register({
        display_name: v.display_name ?? "",
        email: v.email ?? "",
        password: v.password ?? "",
        // An IANA name: the API checks it (a refusal shows in the form's error line).
        timezone: v.timezone ?? "UTC"
      });
      signedIn();
    });
  });
  const signIn = h(
    "form",
    { "data-test": "sign-in", class: "card" },
    h("h2", {}, "Sign in"),
    field("Email", "email", { type: "email", required: true, autocomplete: "email" }),
    field("Password", "password", { type: "password", required: true, autocomplete: "current-password" }),
    h("button", { type: "submit" }, "Sign in"),
    errorLine()
  );
  signIn.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(signIn, async () => {
      const v = values(signIn);
      await vitals.login(v.email ?? "", v.password ?? "");
      signedIn();
    });
  });
  return h(
    "main",
    { class: "auth" },
    h("h1", {}, "Vitals"),
    h("p", { class: "lead" }, "Meals, workouts, sleep and goals, in one place."),
    h("div", { class: "pair" }, signUp, signIn)
  );
}

// src/screen.ts
async function readHome(day) {
  const query = day ? { date: day } : {};
  return withSession(
    async () => ok(await vitals.api.GET("/v1/me/dashboard", { params: { query } }))
  );
}
function homeWhen(day, landed) {
  return eventually(
    "the dashboard to show the change",
    async () => {
      const home = await readHome(day);
      return landed(home) ? home : void 0;
    },
    2e4,
    250
  );
}
function amount(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}
function duration(minutes) {
  const h2 = Math.floor(minutes / 60);
  const m = Math.round(minutes % 60);
  return h2 > 0 ? `${h2} h ${m} min` : `${m} min`;
}
function addDays(day, days) {
  const at = /* @__PURE__ */ new Date(`${day}T00:00:00Z`);
  at.setUTCDate(at.getUTCDate() + days);
  return at.toISOString().slice(0, 10);
}

// src/goals.ts
var KINDS = [
  ["daily_protein_grams", "Protein a day (g)"],
  ["weekly_workout_count", "Workouts a week"],
  ["weekly_active_minutes", "Active minutes a week"],
  ["weekly_distance_km", "Distance a week (km)"],
  ["nightly_sleep_hours", "Sleep a night (h)"]
];
function goalRow(goal) {
  const latest = goal.latest;
  const share = latest ? Math.min(1, latest.value / Math.max(latest.target, 0.1)) : 0;
  return h(
    "li",
    { "data-test": "goal", "data-goal-id": goal.goal_id },
    h("span", { class: "name" }, goal.title),
    latest ? h(
      "span",
      { class: "detail", "data-test": "goal-progress" },
      `${amount(latest.value)} of ${amount(latest.target)} since ${latest.period_start}${latest.met ? " · met" : ""}`
    ) : h("span", { class: "detail" }, "counting…"),
    h("progress", { max: 1, value: share })
  );
}
async function drawGoals(list, tries = 40) {
  const goals = await withSession(async () => ok(await vitals.api.GET("/v1/me/goals", {})));
  list.replaceChildren(
    ...goals.goals.length ? goals.goals.map(goalRow) : [h("li", { class: "empty" }, "No goals yet.")]
  );
  if (tries > 0 && goals.goals.some((g) => g.status === "active" && !g.latest) && list.isConnected) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    return drawGoals(list, tries - 1);
  }
}
function goalsSection(screen) {
  const list = h("ul", { class: "list" }, h("li", { class: "loading" }, "Loading goals…"));
  const form = h(
    "form",
    { class: "goal-form", "data-test": "set-goal" },
    h("label", {}, "Goal", h("select", { name: "kind" }, ...KINDS.map(([kind, label]) => h("option", { value: kind }, label)))),
    field("Target", "target", { type: "number", min: 0.1, step: "0.1", required: true }),
    field("Title", "title", { required: true, maxlength: 80 }),
    h("button", { type: "submit" }, "Set goal"),
    errorLine()
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(form, async () => {
      const v = values(form);
      const body = { kind: v.kind ?? "daily_protein_grams", target: Number(v.target), title: v.title ?? "" };
      const goal = await withSession(async () => ok(await vitals.api.POST("/v1/me/goals", { body })));
      form.reset();
      await screen.converge((home) => home.active_goals.some((g) => g.goal_id === goal.goal_id));
    });
  });
  const section = h("section", { class: "card", "data-test": "goals" }, h("h2", {}, "Goals"), list, form);
  drawGoals(list).catch((error) => list.replaceChildren(h("li", { class: "error", role: "alert" }, describe(error))));
  return section;
}

// src/meals.ts
function nowHhmm() {
  return (/* @__PURE__ */ new Date()).toTimeString().slice(0, 5);
}
function mealFields(meal) {
  const n = meal?.nutrients;
  const time = meal ? new Date(meal.eaten_at).toTimeString().slice(0, 5) : nowHhmm();
  const number = { type: "number", min: 0, step: "0.1", required: true };
  return [
    field("Meal", "name", { required: true, maxlength: 120, value: meal?.name }),
    field("Time", "time", { type: "time", required: true, value: time }),
    field("kcal", "calories", { ...number, value: n?.calories }),
    field("Protein g", "protein_g", { ...number, value: n?.protein_g }),
    field("Carbs g", "carbs_g", { ...number, value: n?.carbs_g }),
    field("Fat g", "fat_g", { ...number, value: n?.fat_g })
  ];
}
function mealBody(form, day) {
  const v = values(form);
  const num = (name) => Number(v[name] ?? "");
  return {
    name: v.name ?? "",
    eaten_at: (/* @__PURE__ */ new Date(`${day}T${v.time ?? "12:00"}:00`)).toISOString(),
    calories: num("calories"),
    protein_g: num("protein_g"),
    carbs_g: num("carbs_g"),
    fat_g: num("fat_g")
  };
}
function logMealSection(screen) {
  const form = h(
    "form",
    { class: "meal-form", "data-test": "log-meal" },
    ...mealFields(),
    h("button", { type: "submit" }, "Log meal"),
    errorLine()
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(form, async () => {
      const body = mealBody(form, screen.day);
      const before = screen.home.day.nutrition.meals;
      const meal = await withSession(async () => ok(await vitals.api.POST("/v1/me/meals", { body })));
      form.reset();
      const counted = before + (meal.day === screen.day ? 1 : 0);
      await screen.converge(
        (home) => home.recent_meals.some((m) => m.meal_id === meal.meal_id) && home.day.nutrition.meals === counted
      );
    });
  });
  return h("section", { class: "card" }, h("h2", {}, "Log a meal"), form);
}
function mealRow(screen, meal) {
  const n = meal.nutrients;
  const row = h(
    "li",
    { "data-test": "meal", "data-meal-id": meal.meal_id },
    h("span", { class: "name" }, meal.name),
    h(
      "span",
      { class: "detail" },
      `${new Date(meal.eaten_at).toTimeString().slice(0, 5)} · ${amount(n.calories)} kcal · P ${amount(n.protein_g)} · C ${amount(n.carbs_g)} · F ${amount(n.fat_g)}`
    )
  );
  const edit = h("button", { type: "button", class: "link", "data-test": "edit-meal" }, "Edit");
  edit.addEventListener("click", () => row.replaceWith(editForm(screen, meal)));
  row.append(edit);
  return row;
}
function editForm(screen, meal) {
  const form = h(
    "form",
    { class: "meal-form", "data-test": "edit-meal-form" },
    ...mealFields(meal),
    h("button", { type: "submit" }, "Save"),
    errorLine()
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(form, async () => {
      const body = mealBody(form, meal.day);
      const path = { id: meal.meal_id };
      const before = screen.home.day.nutrition.totals.calories;
      const saved = await withSession(
        async () => ok(await vitals.api.PUT("/v1/me/meals/{id}", { params: { path }, body }))
      );
      const today = (m) => m.day === screen.day ? m.nutrients.calories : 0;
      const expected = before - today(meal) + today(saved);
      await screen.converge(
        (home) => home.recent_meals.some(
          (m) => m.meal_id === saved.meal_id && m.name === saved.name && m.nutrients.calories === saved.nutrients.calories
        ) && Math.abs(home.day.nutrition.totals.calories - expected) < 0.05
      );
    });
  });
  const cancel = h("button", { type: "button", class: "link" }, "Cancel");
  cancel.addEventListener("click", () => screen.redraw());
  form.append(cancel);
  return h("li", {}, form);
}
function recentMealsSection(screen) {
  const meals = screen.home.recent_meals;
  return h(
    "section",
    { class: "card", "data-test": "recent-meals" },
    h("h2", {}, "Recent meals"),
    meals.length ? h("ul", { class: "list" }, ...meals.map((meal) => mealRow(screen, meal))) : h("p", { class: "empty" }, "No meals yet: log one above.")
  );
}
function recentWorkoutsSection(screen) {
  const workouts = screen.home.recent_workouts;
  return h(
    "section",
    { class: "card", "data-test": "recent-workouts" },
    h("h2", {}, "Recent workouts"),
    workouts.length ? h(
      "ul",
      { class: "list" },
      ...workouts.map(
        (w) => h(
          "li",
          { "data-test": "workout" },
          h("span", { class: "name" }, w.sport),
          h(
            "span",
            { class: "detail" },
            `${w.day} · ${Math.round(w.duration_s / 60)} min${w.distance_m ? ` · ${(w.distance_m / 1e3).toFixed(1)} km` : ""}`
          )
        )
      )
    ) : h("p", { class: "empty" }, "No workouts yet: connect a wearable below.")
  );
}

// src/today.ts
function stat(label, value, test) {
  return h("div", { class: "stat", "data-test": test }, h("span", { class: "value" }, value), h("span", { class: "label" }, label));
}
function todaySection(screen) {
  const { nutrition, activity, sleep } = screen.home.day;
  const totals = nutrition.totals;
  const readiness = screen.home.readiness;
  return h(
    "section",
    { class: "card today", "data-test": "today" },
    h("h2", {}, `Today, ${screen.day}`),
    h(
      "div",
      { class: "stats" },
      stat("kcal", amount(totals.calories), "calories"),
      stat("protein g", amount(totals.protein_g), "protein"),
      stat("carbs g", amount(totals.carbs_g), "carbs"),
      stat("fat g", amount(totals.fat_g), "fat"),
      stat("meals", String(nutrition.meals), "meals")
    ),
    h(
      "div",
      { class: "stats" },
      stat("workouts", String(activity.workouts), "workouts"),
      stat("active", duration(activity.active_minutes), "active"),
      stat("sleep", sleep.sessions > 0 ? duration(sleep.minutes) : "none", "sleep"),
      stat("sleep score", sleep.score == null ? "–" : String(sleep.score), "sleep-score"),
      stat("readiness", readiness ? String(readiness.score) : "not scored yet", "readiness")
    )
  );
}

// src/training.ts
async function current() {
  try {
    return await withSession(async () => ok(await vitals.api.GET("/v1/me/training-block/current", {})));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      return null;
    }
    throw error;
  }
}
function blockView(block) {
  return h(
    "p",
    { "data-test": "training-block" },
    h("strong", {}, block.focus),
    ` · ${block.weeks} weeks, ${block.start_day} to ${block.end_day}`
  );
}
function startForm(screen, body) {
  const form = h(
    "form",
    { "data-test": "start-block" },
    field("Focus", "focus", { required: true, maxlength: 80, placeholder: "Base building" }),
    field("Weeks", "weeks", { type: "number", min: 1, max: 52, value: 4, required: true }),
    h("button", { type: "submit" }, "Start block"),
    errorLine()
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(form, async () => {
      const v = values(form);
      const request = { start_day: screen.day, weeks: Number(v.weeks), focus: v.focus ?? "" };
      await withSession(async () => ok(await vitals.api.POST("/v1/me/training-blocks", { body: request })));
      const block = await eventually("the block to be current", async () => await current() ?? void 0, 2e4, 250);
      body.replaceChildren(blockView(block));
    });
  });
  return form;
}
function trainingSection(screen) {
  const body = h("div", { class: "loading" }, "Loading the training block…");
  current().then((block) => body.replaceChildren(block ? blockView(block) : startForm(screen, body))).catch((error) => body.replaceChildren(h("p", { class: "error", role: "alert" }, describe(error))));
  return h("section", { class: "card", "data-test": "training" }, h("h2", {}, "Training block"), body);
}

// src/wearable.ts
var provider = "sandbox";
function approveForm(screen, state, authorizeUrl) {
  const challenge = new URL(authorizeUrl).searchParams.get("code_challenge") ?? "";
  const suggested = `watch-${Math.random().toString(36).slice(2, 8)}`;
  const form = h(
    "form",
    { "data-test": "approve-wearable" },
    h("p", { class: "detail" }, "At the sandbox vendor: approve Vitals as one of its users."),
    field("Sandbox user", "provider_user", { required: true, value: suggested }),
    h("button", { type: "submit" }, "Approve"),
    errorLine()
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(form, async () => {
      const code = `code-${values(form).provider_user ?? ""}.${challenge}`;
      await withSession(
        async () => ok(await vitals.api.POST("/v1/integrations/{provider}/complete", { params: { path: { provider } }, body: { state, code } }))
      );
      await screen.converge((home) => home.connections.some((c) => c.provider === provider && c.connected));
    });
  });
  return form;
}
function wearableSection(screen) {
  const connected = screen.home.connections.filter((c) => c.connected);
  const body = h("div", {});
  if (connected.length) {
    body.append(
      h(
        "ul",
        { class: "list" },
        ...connected.map(
          (c) => h("li", { "data-test": "connection" }, h("span", { class: "name" }, c.provider), h("span", { class: "detail" }, "connected"))
        )
      )
    );
  } else {
    const start = h("form", { "data-test": "connect-wearable" }, h("button", { type: "submit" }, "Connect the sandbox wearable"), errorLine());
    start.addEventListener("submit", (event) => {
      event.preventDefault();
      void submitting(start, async () => {
        const started = await withSession(
          async () => ok(await vitals.api.POST("/v1/integrations/{provider}/connect", { params: { path: { provider } } }))
        );
        start.replaceWith(approveForm(screen, started.state, started.authorize_url));
      });
    });
    body.append(start);
  }
  return h("section", { class: "card", "data-test": "wearable" }, h("h2", {}, "Wearable"), body);
}

// src/week.ts
var SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) {
    element.setAttribute(name, String(value));
  }
  return element;
}
function weekOf(day, days) {
  return Array.from({ length: 7 }, (_, i) => {
    const d = addDays(day, i - 6);
    return { day: d, calories: days.find((s) => s.day === d)?.totals.calories ?? 0 };
  });
}
function chart(week) {
  const width = 420;
  const height = 180;
  const top = Math.max(500, ...week.map((d) => d.calories));
  const bar = width / week.length;
  const root2 = svg("svg", { viewBox: `0 0 ${width} ${height + 36}`, role: "img", "aria-label": "calories per day, last 7 days" });
  week.forEach((d, i) => {
    const tall = Math.round(d.calories / top * height);
    const x = i * bar + 8;
    const rect = svg("rect", { x, y: height - tall, width: bar - 16, height: tall, rx: 4, class: "bar" });
    rect.setAttribute("data-test", "bar");
    rect.setAttribute("data-day", d.day);
    rect.setAttribute("data-calories", String(d.calories));
    const title = svg("title", {});
    title.textContent = `${d.day}: ${amount(d.calories)} kcal`;
    rect.append(title);
    const label = svg("text", { x: x + (bar - 16) / 2, y: height + 16, "text-anchor": "middle", class: "axis" });
    label.textContent = d.day.slice(5);
    const value = svg("text", { x: x + (bar - 16) / 2, y: height + 32, "text-anchor": "middle", class: "axis" });
    value.textContent = d.calories ? amount(d.calories) : "";
    root2.append(rect, label, value);
  });
  return root2;
}
function weekSection(screen) {
  const body = h("div", { class: "loading" }, "Loading the week…");
  const section = h("section", { class: "card", "data-test": "week" }, h("h2", {}, "This week's calories"), body);
  const from = addDays(screen.day, -6);
  withSession(async () => ok(await vitals.api.GET("/v1/me/nutrition/daily", { params: { query: { from, to: screen.day } } }))).then((daily) => {
    const drawn = h("div", { class: "chart", "data-test": "week-chart" });
    drawn.append(chart(weekOf(screen.day, daily.days)));
    body.replaceWith(drawn);
  }).catch((error) => {
    body.replaceWith(h("p", { class: "error", role: "alert" }, describe(error)));
  });
  return section;
}

// src/home.ts
async function homeScreen(root2, signedOut) {
  replace(root2, h("main", { class: "loading", "data-test": "loading" }, "Loading your day…"));
  const first = await readHome();
  const badge = h("span", { class: "badge", "data-test": "sync", "data-state": "idle" }, "Up to date");
  const sections = h("div", { class: "grid" });
  const signOut = h("button", { type: "button", class: "link", "data-test": "sign-out" }, "Sign out");
  signOut.addEventListener("click", () => {
    vitals.logout().finally(signedOut).catch(() => void 0);
  });
  const screen = {
    day: first.day.day,
    home: first,
    redraw: () => draw(),
    converge: async (landed) => {
      badge.textContent = "Updating…";
      badge.dataset.state = "updating";
      try {
        screen.home = await homeWhen(screen.day, landed);
        badge.textContent = "Up to date";
        badge.dataset.state = "idle";
      } catch (error) {
        badge.textContent = `Not updated yet: ${describe(error)}`;
        badge.dataset.state = "late";
      }
      draw();
    }
  };
  function draw() {
    replace(
      sections,
      todaySection(screen),
      logMealSection(screen),
      recentMealsSection(screen),
      weekSection(screen),
      goalsSection(screen),
      recentWorkoutsSection(screen),
      trainingSection(screen),
      wearableSection(screen)
    );
  }
  const name = first.profile?.display_name ?? "";
  replace(
    root2,
    h(
      "main",
      { class: "home", "data-test": "home" },
      h("header", {}, h("h1", {}, "Vitals"), h("span", { class: "who" }, name), badge, signOut),
      sections
    )
  );
  draw();
}

// src/main.ts
var root = document.getElementById("app");
function show() {
  if (!root) {
    return;
  }
  if (!vitals.session) {
    replace(root, authScreen(show));
    return;
  }
  homeScreen(root, show).catch((error) => {
    vitals.resume(null);
    replace(root, h("p", { class: "error", role: "alert" }, describe(error)), authScreen(show));
  });
}
show();
