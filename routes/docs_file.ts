/**
 * The type of the docs page's files, shared by the page (`routes/docs_page.ts`) and Swagger UI's
 * files it imports on first use (`routes/docs_assets.ts`).
 */

/**
 * A file of the page: its media type and its text, or its gzip bytes after `GZIP_MARK`
 * (`routes/docs_page.ts`).
 */
export interface DocsFile {
  type: string;
  text: string;
}
