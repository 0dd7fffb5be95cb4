/**
 * Connecting the sandbox wearable: start the connect, approve it at the sandbox (which
 * stands in for the vendor's page: its code is bound to the connect's PKCE challenge),
 * and complete it with what the vendor's redirect would carry.
 */
import { ok } from "../../typescript/src/index.js";
import { errorLine, field, h, onSubmit, values } from "./dom.js";
import { vitals } from "./session.js";
import type { Screen } from "./screen.js";

const provider = "sandbox";

function approveForm(screen: Screen, state: string, authorizeUrl: string): HTMLFormElement {
  const challenge = new URL(authorizeUrl).searchParams.get("code_challenge") ?? "";
  const suggested = `watch-${Math.random().toString(36).slice(2, 8)}`;
  const form = h(
    "form",
    { "data-test": "approve-wearable" },
    h("p", { class: "detail" }, "At the sandbox vendor: approve Vitals as one of its users."),
    field("Sandbox user", "provider_user", { required: true, value: suggested }),
    h("button", { type: "submit" }, "Approve"),
    errorLine(),
  );
  onSubmit(form, async () => {
    const code = `code-${values(form).provider_user ?? ""}.${challenge}`;
    await vitals.authorized(async () =>
      ok(await vitals.api.POST("/v1/integrations/{provider}/complete", { params: { path: { provider } }, body: { state, code } })),
    );
    await screen.converge((home) => home.connections.some((c) => c.provider === provider && c.connected));
  });
  return form;
}

export function wearableSection(screen: Screen): HTMLElement {
  const connected = screen.home.connections.filter((c) => c.connected);
  const body = h("div", {});
  if (connected.length) {
    body.append(
      h(
        "ul",
        { class: "list" },
        ...connected.map((c) =>
          h("li", { "data-test": "connection" }, h("span", { class: "name" }, c.provider), h("span", { class: "detail" }, "connected")),
        ),
      ),
    );
  } else {
    const start = h("form", { "data-test": "connect-wearable" }, h("button", { type: "submit" }, "Connect the sandbox wearable"), errorLine());
    onSubmit(start, async () => {
      const started = await vitals.authorized(async () =>
        ok(await vitals.api.POST("/v1/integrations/{provider}/connect", { params: { path: { provider } } })),
      );
      start.replaceWith(approveForm(screen, started.state, started.authorize_url));
    });
    body.append(start);
  }
  return h("section", { class: "card", "data-test": "wearable" }, h("h2", {}, "Wearable"), body);
}
