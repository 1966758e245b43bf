// The "Try it" steps: from sign-up to a search, an upload and MCP, in a terminal. The README's
// "Try it" block is this text (a test keeps them equal), and the API reference opens with it.
export const TRY_IT = `SIFT=http://127.0.0.1:7700
# Sign up (the cookie is the dashboard session), make a secret key, a service and an index.
curl -c jar -H 'content-type: application/json' -d '{"email":"me@example.com","password":"a long password"}' $SIFT/v1/auth/signup
SIFT_KEY=$(curl -sb jar -H 'content-type: application/json' -d '{"type":"adm","name":"laptop"}' $SIFT/v1/api-keys | node -pe 'JSON.parse(require("fs").readFileSync(0)).key')
curl -H "authorization: Bearer $SIFT_KEY" -H 'content-type: application/json' -d '{"name":"my-shop"}' $SIFT/v1/services
curl -H "authorization: Bearer $SIFT_KEY" -H 'content-type: application/json' -d '{"name":"products","serviceName":"my-shop","visibility":"PUBLIC"}' $SIFT/v1/indexes

# Write a record (a new version, searchable at once), search, roll back.
curl -X PUT -H "authorization: Bearer $SIFT_KEY" -H 'content-type: application/json' \\
  -d '{"title":"Garden hose","weight":40,"data":{"price":19.9,"inStock":true}}' $SIFT/v1/indexes/products/records/hose-1
curl "$SIFT/v1/search?query=gar&indexName=products&serviceName=my-shop&weighted=true&filter=data.price%3C20"
# The matched parts of each title: "highlight":{"title":[[0,6],[7,9]]}. Typos are tolerated
# ("gardn" finds it too) unless typoTolerance=false.
curl "$SIFT/v1/search?query=garden%20ho&indexName=products&serviceName=my-shop&weighted=true&highlight=true"
curl -H "authorization: Bearer $SIFT_KEY" $SIFT/v1/indexes/products/versions
curl -X POST -H "authorization: Bearer $SIFT_KEY" $SIFT/v1/indexes/products/versions/0/activate

# Bulk upload a file (CSV with a header, JSON Lines or a JSON array; gzip is fine). Columns and
# fields are taken by name (id, title, weight, images, latitude, longitude); every other one goes
# into \`data\`. An upload replaces the index's records with the file's (records deleted earlier
# stay deleted): docs/uploads.md.
npx @sift/cli upload products.csv --index products --api-key $SIFT_KEY

# MCP: give a host the URL $SIFT/mcp: it signs in through your browser (OAuth: the dashboard's
# sign-in, then Allow; docs/mcp-auth.md). Or send \`Authorization: Bearer $SIFT_KEY\` with it; hosts
# that launch local servers run @sift/mcp (mcp/README.md has a host configuration).
npx -y @sift/mcp --base-url $SIFT --api-key $SIFT_KEY
`;
