/// `DIR/style.css`, the gallery's only stylesheet: system fonts (nothing to fetch), a grid
/// that reflows from one column on a phone to many on a desktop, and a dark palette
/// for `prefers-color-scheme: dark`.
enum GalleryStylesheet {
    static let fileName = "style.css"

    static let css = """
    :root { color-scheme: light dark; --bg: #f6f6f4; --card: #ffffff; --text: #1d1d1f; --muted: #5f6368;
            --line: #e2e2e0; --accent: #0a58ca; --shade: #ececea; }
    @media (prefers-color-scheme: dark) {
      :root { --bg: #121214; --card: #1e1e22; --text: #ececf0; --muted: #a0a0aa; --line: #33333a;
              --accent: #8ab4f8; --shade: #2a2a30; }
    }
    * { box-sizing: border-box; }
    html { -webkit-text-size-adjust: 100%; }
    body { margin: 0; background: var(--bg); color: var(--text);
           font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
    a { color: var(--accent); }
    header, main { max-width: 1100px; margin: 0 auto; padding: 16px; }
    header h1 { margin: 0 0 4px; font-size: 1.5rem; }
    .muted { color: var(--muted); font-size: .875rem; }
    .grid { list-style: none; margin: 0; padding: 0; display: grid; gap: 16px;
            grid-template-columns: repeat(auto-fill, minmax(min(100%, 220px), 1fr)); }
    .card { background: var(--card); border: 1px solid var(--line); border-radius: 12px; overflow: hidden;
            display: flex; flex-direction: column; }
    .card > a { display: block; color: inherit; text-decoration: none; }
    .card img, .card .noimage { width: 100%; height: auto; aspect-ratio: 1; background: var(--shade); }
    .card img { display: block; object-fit: cover; }
    .card .noimage { display: flex; align-items: center; justify-content: center; color: var(--muted); font-size: .875rem; }
    .card .body { padding: 10px 12px 12px; }
    .card .memo { font-weight: 600; margin: 0 0 4px; overflow-wrap: anywhere; }
    .card .memo a { color: inherit; text-decoration: none; }
    .card .memo a:hover, .card .memo a:focus { text-decoration: underline; }
    .type { display: inline-block; font-size: .75rem; padding: 1px 8px; border-radius: 999px;
            background: var(--shade); color: var(--muted); }
    dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 8px 0 0; font-size: .875rem; }
    dl.fields dt { color: var(--muted); }
    dl.fields dd { margin: 0; overflow-wrap: anywhere; }
    figure { margin: 0 0 16px; }
    figure img { display: block; max-width: 100%; max-height: 80vh; width: auto; height: auto; border-radius: 8px;
                 background: var(--shade); }
    @media (min-width: 820px) {
      main.record { display: grid; grid-template-columns: minmax(0, 3fr) minmax(300px, 2fr); gap: 20px; align-items: start; }
      main.record > .details { grid-column: 2; }
      main.record > figure { position: sticky; top: 16px; }
    }
    section { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 12px 16px; margin: 0 0 16px; }
    section h2 { font-size: 1rem; margin: 0 0 8px; }
    table { border-collapse: collapse; width: 100%; font-size: .875rem; }
    th, td { text-align: left; padding: 4px 8px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top;
             overflow-wrap: anywhere; }
    th { color: var(--muted); font-weight: normal; width: 30%; }
    .memo-text { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 1.25rem; margin: 0 0 12px; }
    code { font-size: .8125rem; overflow-wrap: anywhere; }
    """
}
