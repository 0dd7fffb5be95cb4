// The API reference at /docs: Swagger UI (swagger-ui-dist, vendored beside this file and
// served by the binary) rendering the OpenAPI document this server serves. No validator
// badge: it would ask validator.swagger.io, and the page loads nothing from elsewhere.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
