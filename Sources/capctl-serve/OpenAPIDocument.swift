/// The API's OpenAPI 3 document, served at /openapi.json.
enum OpenAPIDocument {
    static let text = #"{"openapi": "3.0.3", "info": {"title": "capctl serve", "version": "0.1.0"}, "paths": {}}"#
}
