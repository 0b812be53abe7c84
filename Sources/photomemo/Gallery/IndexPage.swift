/// `index.html`: a grid of cards (thumbnail, memo, type, fields, created) in the query's order.
extension GalleryPages {
    /// `summary` says what was queried (type, predicate, sort).
    static func index(_ records: [GalleryRecord], summary: String, _ context: Context) -> String {
        let count = "\(records.count) record\(records.count == 1 ? "" : "s")"
        let header = el("header", [], el("h1", [], "photomemo gallery"), el("p", [.text("class", "muted")], HTML("\(count) · \(summary)")))
        let main = el("main", [], records.isEmpty ? el("p", [], "No records match.")
                                                  : HTML.element("ul", [.text("class", "grid")], records.map { card($0, context) }))
        return HTML.document(title: "photomemo gallery", stylesheet: stylesheet(depth: 0), body: [header, main])
    }

    /// The image and the memo both link to the record's page; fields sit outside those
    /// links, since a reference field is a link of its own.
    private static func card(_ r: GalleryRecord, _ context: Context) -> HTML {
        let page = recordPage(r, depth: 0)
        let picture: HTML
        if let t = r.thumbnail, context.hasImage(t) {
            picture = image(t, alt: "Photo: \(r.title)", depth: 0)
        } else {
            picture = el("div", [.text("class", "noimage"), .text("role", "img"), .text("aria-label", "no image")], "no image")
        }
        let fields: HTML = r.fields.isEmpty ? .empty : HTML.element("dl", [.text("class", "fields")], r.fields.flatMap { f in
            [el("dt", [], HTML(f.name)), el("dd", [], value(f.value, context, depth: 0))]
        })
        let body = el("div", [.text("class", "body")],
                      el("p", [.text("class", "memo")], el("a", [.path("href", page)], HTML(r.title))),
                      el("span", [.text("class", "type")], HTML(r.type)),
                      fields,
                      el("p", [.text("class", "muted")], el("time", [.text("datetime", r.created)], HTML(galleryDate(r.created)))))
        // The picture's link repeats the memo's, so it is skipped by keyboard and screen readers.
        return el("li", [.text("class", "card"), .text("id", "card-" + r.id)],
                  el("a", [.path("href", page), .text("tabindex", "-1"), .text("aria-hidden", "true")], picture), body)
    }
}
