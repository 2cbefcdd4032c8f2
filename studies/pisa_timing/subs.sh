set -u
cd /work/pisa-build/pisa
declare -A M=( [FastPFor]=lemire+FastPFor/repo [CLI11]=CLIUtils+CLI11/repo [streamvbyte]=lemire+streamvbyte/repo [MaskedVByte]=lemire+MaskedVByte/repo [QMX]=amallia+QMX/repo/.git [mio]=mandreyel+mio/repo [simdcomp]=lemire+simdcomp/repo [Porter2]=pisa-engine+Porter2/repo [KrovetzStemmer]=pisa-engine+KrovetzStemmer/repo [warcpp]=pisa-engine+warcpp/repo [trecpp]=pisa-engine+trecpp/repo [wapopp]=pisa-engine+wapopp/repo [taily]=pisa-engine+taily/repo [gumbo-parser]=google+gumbo-parser/repo [fmt]=fmtlib+fmt/repo [spdlog]=gabime+spdlog/repo [range-v3]=ericniebler+range-v3/repo [rapidcheck]=emil-e+rapidcheck/repo [Catch2]=catchorg+Catch2/repo )
for s in "${!M[@]}"; do
  pin=$(git ls-tree HEAD external/$s | awk '{print $3}')
  src=/work/.mirror/${M[$s]}
  rmdir external/$s 2>/dev/null; rm -rf external/$s
  git clone -q "$src" external/$s 2>&1 | tail -1
  if git -C external/$s cat-file -e "$pin^{commit}" 2>/dev/null; then
    git -C external/$s checkout -q "$pin" && echo "$s pinned $pin OK"
  else
    echo "$s pinned $pin MISSING; HEAD=$(git -C external/$s rev-parse HEAD)"
  fi
done
