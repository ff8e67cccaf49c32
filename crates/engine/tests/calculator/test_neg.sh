out=$(sh neg.sh 4)
[ "$out" = -4 ] || { echo "neg 4 gave $out, expected -4"; exit 1; }
